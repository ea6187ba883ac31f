"""Module attributes imported on first use (PEP 562): the one lazy-import mechanism.

A package whose public names live in heavy modules (torch, the research loop) re-exports them
lazily, so that importing the package, or a light sibling through it, stays cheap. The same
serves submodules: ``alphaloop.ops`` names its modules this way, so a command module imports
``alphaloop.ops`` and calls ``ops.sessions.list_sessions(...)``, and listing the commands
(``alphaloop --help``) loads none of what only running one of them needs.
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
        package: the package's (or module's) ``__name__``.
        where: public name -> the module that defines it; a submodule of ``package`` names
            itself (``{"sessions": "alphaloop.ops.sessions"}``) and is the attribute.
        exported: the package's ``__all__``.
    """
    names = sorted(set(exported))

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        loaded = importlib.import_module(module)
        value = loaded if module == f"{package}.{name}" else getattr(loaded, name)
        setattr(sys.modules[package], name, value)  # later reads skip this function
        return value

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(names))

    return __getattr__, __dir__


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
