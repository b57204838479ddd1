"""Memory available now, read before anything large is allocated (``dmljax run``'s models,
``dmljax bench``'s sizes): the host's and, on an accelerator, the default device's."""

from __future__ import annotations

import os

import jax

__all__ = ["host_available", "device_available"]


def host_available() -> int | None:
    """Linux's MemAvailable (bytes the system can give without swapping), else free pages; None
    where neither can be read."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, AttributeError):
        return None


def device_available() -> int | None:
    """Free memory of the default device when it reports it (``memory_stats()``'s bytes_limit
    minus bytes_in_use: GPUs, TPUs); None on the CPU or a backend without statistics."""
    try:
        stats = jax.devices()[0].memory_stats()
    except Exception:  # noqa: BLE001  (a backend without memory statistics)
        return None
    if not stats or "bytes_limit" not in stats:
        return None
    return int(stats["bytes_limit"]) - int(stats.get("bytes_in_use", 0))
