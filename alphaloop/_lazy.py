"""Package attributes imported on first use (PEP 562).

A package whose public names live in heavy modules (torch, the research loop) re-exports them
lazily, so that importing the package, or a light sibling through it, stays cheap.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable
from typing import Any


def lazy_attributes(
    package: str, where: dict[str, str], exported: Iterable[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package`` for names imported on first use.

    Args:
        package: the package's ``__name__``.
        where: public name -> the module that defines it.
        exported: the package's ``__all__``.
    """
    names = sorted(set(exported))

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)  # later reads skip this function
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(names))

    return __getattr__, __dir__
