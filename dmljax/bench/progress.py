"""The progress bar: tqdm where it imports (``pip install dmljax[bench]``), else rich, else none."""

from __future__ import annotations

import sys

__all__ = ["progress_bar"]


def progress_bar(total: int, enabled: bool, desc: str):
    """A progress bar on stderr: tqdm, else rich, else none (also when not ``enabled``)."""
    class _Null:
        def update(self, n=1): pass
        def set_postfix_str(self, s): pass
        def close(self): pass
    if not enabled:
        return _Null()
    try:
        from tqdm.auto import tqdm  # noqa: PLC0415  (optional)
        return tqdm(total=total, desc=desc, file=sys.stderr, dynamic_ncols=True)
    except ImportError:
        pass
    try:
        from rich.progress import Progress  # noqa: PLC0415  (optional)

        class _Rich:
            def __init__(self):
                self.p = Progress(transient=False)
                self.p.start()
                self.t = self.p.add_task(desc, total=total)
            def update(self, n=1): self.p.advance(self.t, n)
            def set_postfix_str(self, s): self.p.update(self.t, description=f"{desc} {s}")
            def close(self): self.p.stop()
        return _Rich()
    except ImportError:
        return _Null()
