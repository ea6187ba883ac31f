"""The package map as a test: which alphaloop package may import which.

Imports are read with ``ast`` from every module, function-level and ``TYPE_CHECKING`` imports
included (a lazy import is still an arrow). Arrows point one way::

    front ends (cli, tools, chat) -> ops -> meta_agent, trials, journal, charts, llm
        -> engines (rl_engine, portfolio_opt) -> knobs, market, metrics

with ``exceptions`` and ``settings`` usable from anywhere. The README's package map says the
same in words.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import alphaloop

ROOT = Path(alphaloop.__file__).parent

# The scheduler drives ops on a clock, as a front end does on a request.
FRONT_ENDS = {"cli", "tools", "chat", "server", "scheduler"}
ENGINES = {"rl_engine", "portfolio_opt", "pipeline"}
FOUNDATIONS = {"knobs", "market", "metrics"}
SHARED = {"exceptions", "settings", "_lazy", "telemetry"}
# The research and evaluation core: what ``ops`` composes.
CORE = {
    "meta_agent",
    "trials",
    "journal",
    "charts",
    "validation",
    "llm",
    "llm_json",
    "prompts",
    # the continuous loop: policy library, portfolio manager, brokers, preference flywheel
    "library",
    "pm",
    "broker",
    "flywheel",
}

# package -> packages it must never import (directly or lazily)
FORBIDDEN: dict[str, set[str]] = {
    **{p: FRONT_ENDS | {"ops"} for p in CORE | ENGINES | FOUNDATIONS | SHARED},
    "ops": set(FRONT_ENDS),
    # A front end goes through ops for anything that runs or reads research.
    **{
        p: {"meta_agent", "trials", "charts", "rl_engine", "portfolio_opt", "market", "validation"}
        for p in FRONT_ENDS
    },
}
for engine in ENGINES:
    FORBIDDEN[engine] |= {"journal", "meta_agent", "trials", "charts", "llm"}
# Foundations import no other alphaloop package but the shared ones.
ALLOWED_FOUNDATION_IMPORTS = SHARED


def _package(module: str) -> str | None:
    """The top-level alphaloop package of a dotted module name (``alphaloop.x.y`` -> ``x``)."""
    parts = module.split(".")
    if parts[0] != "alphaloop":
        return None
    return parts[1] if len(parts) > 1 else "__init__"


def _imported(path: Path, module: str) -> Iterator[str]:
    """Every alphaloop module ``path`` imports, at any depth of the file."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against this module's package
                base = module.split(".")
                base = base[: len(base) - node.level + (path.name == "__init__.py")]
                yield ".".join([*base, node.module] if node.module else base)
            elif node.module:
                yield node.module
                yield from (f"{node.module}.{a.name}" for a in node.names)


def _modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        yield ".".join(parts), path


def package_graph() -> dict[str, set[str]]:
    """Top-level package -> the other top-level packages it imports."""
    graph: dict[str, set[str]] = {}
    for module, path in _modules():
        source = _package(module)
        if source is None or source in ("__init__", "__main__"):
            continue
        targets = graph.setdefault(source, set())
        for name in _imported(path, module):
            target = _package(name)
            if target and target != source and target != "__init__":
                targets.add(target)
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as a path, or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_graph_sees_lazy_imports() -> None:
    graph = package_graph()
    # cli imports its operations inside functions too; the test must see those arrows.
    assert "ops" in graph["cli"] and "ops" in graph["tools"]


def test_no_cycle_between_packages() -> None:
    assert _cycle(package_graph()) is None


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_arrows_point_one_way(package: str) -> None:
    wrong = package_graph().get(package, set()) & FORBIDDEN[package]
    assert not wrong, f"alphaloop.{package} imports {sorted(wrong)}"


@pytest.mark.parametrize("package", sorted(FOUNDATIONS))
def test_foundations_stand_alone(package: str) -> None:
    wrong = package_graph().get(package, set()) - ALLOWED_FOUNDATION_IMPORTS
    assert not wrong, f"alphaloop.{package} imports {sorted(wrong)}"


def test_every_package_is_placed_in_the_map() -> None:
    placed = FRONT_ENDS | ENGINES | FOUNDATIONS | SHARED | CORE | {"ops"}
    assert set(package_graph()) <= placed


def _loaded_after(statement: str) -> set[str]:
    code = f"import sys; {statement}; print(' '.join(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    ).stdout
    return {name.split(".")[0] for name in out.split()}


def test_the_knobs_load_without_the_rl_stack() -> None:
    loaded = _loaded_after("import alphaloop.knobs")
    assert not loaded & {"gymnasium", "torch", "stable_baselines3"}


def test_the_rl_engine_registers_its_env() -> None:
    loaded = _loaded_after(
        "import gymnasium, alphaloop.rl_engine; "
        "assert alphaloop.rl_engine.ENV_ID in gymnasium.registry"
    )
    assert "gymnasium" in loaded
