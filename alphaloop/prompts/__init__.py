"""Prompt templates as plain Markdown files, and the tiny loader that fills them in.

Templates use ``string.Template`` placeholders (``$name`` / ``${name}``), not ``str.format``, so
JSON examples with braces can be written in them as they are.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from string import Template

__all__ = ["load", "render"]


@cache
def load(name: str) -> str:
    """The text of ``alphaloop/prompts/<name>.md``.

    Raises:
        FileNotFoundError: no such template.
    """
    path = resources.files(__package__).joinpath(f"{name}.md")
    if not path.is_file():
        raise FileNotFoundError(f"no prompt template named {name!r} (looked for {name}.md)")
    return path.read_text(encoding="utf-8")


def render(name: str, **values: object) -> str:
    """Fills template ``name``; every placeholder must be given (a missing one raises KeyError)."""
    return Template(load(name)).substitute({k: str(v) for k, v in values.items()}).strip() + "\n"
