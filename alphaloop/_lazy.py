"""Package attributes and modules imported on first use (PEP 562).

A package whose public names live in heavy modules (torch, the research loop) re-exports them
lazily, so that importing the package, or a light sibling through it, stays cheap. A command
module names the heavy module its commands call with :func:`lazy_module`, so that listing the
commands (``alphaloop --help``) does not load what only running one of them needs.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from importlib.machinery import ModuleSpec
from types import ModuleType
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


class _LazyModule:
    """Stands for a module until an attribute of it is read, then imports it."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        return getattr(importlib.import_module(self._name), attr)

    def __repr__(self) -> str:
        return f"<module {self._name!r}, imported on first use>"


def lazy_module(name: str) -> Any:
    """The module ``name``, imported when one of its attributes is first read.

    Bind it under ``if not TYPE_CHECKING`` beside a plain import for type checkers, so both
    see the module's real names.
    """
    return _LazyModule(name)


@contextmanager
def without_modules(*names: str) -> Iterator[None]:
    """Within the block, importing any of ``names`` not already loaded raises ImportError.

    For a library that imports an optional heavy module whenever it is installed, when we never
    use what it does with it. A module already loaded stays loaded and visible.
    """
    hidden = [name for name in names if name not in sys.modules]
    for name in hidden:
        sys.modules[name] = None  # type: ignore[assignment]  # the import system's "not found"
    try:
        yield
    finally:
        for name in hidden:
            if sys.modules.get(name, 0) is None:
                del sys.modules[name]


# The import protocol is duck-typed: these two do not subclass importlib.abc, whose import
# (importlib.resources, tempfile, shutil...) costs more than everything else in this module.
class _ThenCall:
    """A module's own loader, calling ``callback`` once the module has run."""

    def __init__(self, loader: Any, callback: Callable[[ModuleType], None]) -> None:
        self._loader = loader
        self._callback = callback

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        self._callback(module)

    def __getattr__(self, name: str) -> Any:  # resource readers and the like
        return getattr(self._loader, name)


class _WhenImported:
    """Finds the module ``name`` with the other finders, once, and wraps its loader."""

    def __init__(self, name: str, callback: Callable[[ModuleType], None]) -> None:
        self._name = name
        self._callback = callback

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> ModuleSpec | None:
        if fullname != self._name:
            return None
        import importlib.util

        sys.meta_path.remove(self)  # once; and the search below must not find this finder
        spec = importlib.util.find_spec(fullname)
        if spec is not None and spec.loader is not None:
            spec.loader = _ThenCall(spec.loader, self._callback)
        return spec


def when_imported(name: str, callback: Callable[[ModuleType], None]) -> None:
    """Calls ``callback(module)`` once the top-level module ``name`` is imported: now if it
    already is, else right after it first runs. Importing ``name`` stays the caller's choice.
    """
    if name in sys.modules:
        callback(sys.modules[name])
    else:
        sys.meta_path.insert(0, _WhenImported(name, callback))
