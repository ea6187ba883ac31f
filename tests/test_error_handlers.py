"""No handler in alphaloop catches every exception and drops it: a ``except Exception`` (or
``BaseException``, or a bare ``except``) re-raises, logs or journals what it caught."""

from __future__ import annotations

import ast
from pathlib import Path

import alphaloop

ROOT = Path(alphaloop.__file__).parent
CATCH_ALL = {"Exception", "BaseException"}
# A debug or info line is not how a dropped error becomes visible.
LOG_METHODS = {"warning", "error", "exception", "critical"}

# Handlers that drop what they catch, by file and enclosing function, each with why it is still
# here and what it should do. Empty this as they are fixed: an entry that no longer matches a
# handler fails the test too.
ALLOWED: dict[tuple[str, str], str] = {}


def _catches_everything(handler: ast.ExceptHandler) -> bool:
    if handler.type is None:
        return True
    kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(isinstance(k, ast.Name) and k.id in CATCH_ALL for k in kinds)


def _callee(call: ast.Call) -> str:
    """The called name with its receivers, e.g. ``self.journal.finish_run``."""
    parts, node = [], call.func
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def _keeps_it(handler: ast.ExceptHandler) -> bool:
    """Whether the handler's body re-raises (the error or another), logs a warning or worse,
    or journals (calls something named after the journal)."""
    for node in ast.walk(ast.Module(body=handler.body, type_ignores=[])):
        if isinstance(node, ast.Raise):
            return True
        if isinstance(node, ast.Call):
            name = _callee(node)
            receiver, _, method = name.rpartition(".")
            if method in LOG_METHODS and receiver.split(".")[-1] in {"log", "logger", "logging"}:
                return True
            if "journal" in name.lower():
                return True
    return False


def dropped(source: str) -> list[tuple[int, str]]:
    """(line, enclosing function) of every catch-all handler in ``source`` that drops."""
    found = []

    def visit(node: ast.AST, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = (
                child.name if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) else where
            )
            if isinstance(child, ast.ExceptHandler):
                if _catches_everything(child) and not _keeps_it(child):
                    found.append((child.lineno, where))
            visit(child, inner)

    visit(ast.parse(source), "<module>")
    return found


def test_the_check_tells_a_dropping_handler_from_one_that_keeps_the_error() -> None:
    source = """
def swallow():
    try:
        work()
    except Exception:
        return None

def bare():
    try:
        work()
    except:
        pass

def logs():
    try:
        work()
    except Exception as err:
        logger.warning("work failed: %s", err)

def whispers():
    try:
        work()
    except Exception as err:
        logger.debug("work failed: %s", err)

def journals():
    try:
        work()
    except BaseException as err:
        journal.finish_run(status="failed", error=repr(err))

def reraises():
    try:
        work()
    except (OSError, Exception) as err:
        raise RuntimeError("work failed") from err

def narrow():
    try:
        work()
    except ValueError:
        return None
"""
    assert dropped(source) == [(5, "swallow"), (11, "bare"), (23, "whispers")]


def test_no_catch_all_handler_drops_the_error() -> None:
    found, seen = [], set()
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        for line, where in dropped(path.read_text(encoding="utf-8")):
            if (rel, where) in ALLOWED:
                seen.add((rel, where))
            else:
                found.append(f"alphaloop/{rel}:{line} in {where}")
    assert not found, "catch-all handlers that neither re-raise, log nor journal:\n" + "\n".join(
        found
    )
    assert seen == set(ALLOWED), f"fixed, drop from ALLOWED: {sorted(set(ALLOWED) - seen)}"
