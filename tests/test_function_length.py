"""No function in ``alphaloop/`` is longer than 60 lines: a function that long does several
things, and each deserves a name. Counted from the ``def`` line (decorators left out) to the
function's last line, docstring included."""

from __future__ import annotations

import ast
from pathlib import Path

import alphaloop

ROOT = Path(alphaloop.__file__).parent
MAX_LINES = 60


def long_functions(root: Path, limit: int = MAX_LINES) -> list[str]:
    """``path:line name (n lines)`` for each function of ``root`` longer than ``limit``."""
    found = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                n = node.end_lineno - node.lineno + 1
                if n > limit:
                    where = path.relative_to(root.parent)
                    found.append(f"{where}:{node.lineno} {node.name} ({n} lines)")
    return found


def test_no_function_is_longer_than_60_lines() -> None:
    assert long_functions(ROOT) == []


def test_the_count_sees_a_long_function(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(60))
    (tmp_path / "m.py").write_text(f"def f():\n{body}\n\n\ndef g():\n    return 1\n")
    assert long_functions(tmp_path) == [f"{tmp_path.name}/m.py:1 f (61 lines)"]
