"""The operators, by family: ``ops/<family>/`` is the catalog's family (``dmljax.catalog()``), one
module an operator or operator group, each record with its formula right below it and a ``*_GRAD``
operator beside its forward operator; ``factories.py`` holds what whole families share.

Importing this package imports every module below it, which registers every operator;
``OPERATORS`` maps each registered operator's Python names (its aliases' too) to its function."""

import importlib
import pkgutil

from dmljax._src.registry import registry

for _module in pkgutil.walk_packages(__path__, prefix=__name__ + "."):
    importlib.import_module(_module.name)  # importing a module registers its operators

OPERATORS = {op.__name__: op for op in registry().values()}
OPERATORS.update({alias.lower(): op for op in registry().values() for alias in op.spec.entry.aliases})
"""Each operator under its Python name, and under its DirectML aliases' (``scatter``, the
alias of ``scatter_elements``): the same function."""
