"""Modules loaded when first used, for start-up time: ``ccarena list`` or a
small ``ccarena run`` should not pay for pandas, numpy or matplotlib when it
never calls them. A module written ::

    if TYPE_CHECKING:
        import pandas as pd
    else:
        pd = lazy("pandas")

reads ``pd.DataFrame`` as usual; the import happens at the first attribute
read, with the signals held (``interrupt.deferred``), as every import of a
command is (``interrupt.guard_imports``)."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from .interrupt import deferred

__all__ = ["lazy"]


class _Lazy:
    __slots__ = ("_module", "_name")

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: ModuleType | None = None

    def __getattr__(self, attr: str) -> Any:
        module = self._module
        if module is None:
            with deferred():
                module = importlib.import_module(self._name)
            self._module = module
        return getattr(module, attr)

    def __repr__(self) -> str:
        state = "loaded" if self._module is not None else "not loaded yet"
        return f"<lazy module {self._name!r} ({state})>"


def lazy(name: str) -> Any:
    """Module ``name``, imported at its first attribute read."""
    return _Lazy(name)
