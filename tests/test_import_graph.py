"""The package map as a test: which alphaloop package may import which, package by package.

Imports are read with ``ast`` from every module, function-level and ``TYPE_CHECKING`` imports
included (a lazy import is still an arrow). Arrows point one way (docs/design.md)::

    front ends (cli, server, tools, chat, scheduler) -> ops (nothing below it)
        -> meta_agent, flywheel, pm, library, validation, charts -> placement -> trials
        -> engines (pipeline, rl_engine, portfolio_opt) -> knobs, market, metrics

The journal is read and written from ``ops`` and the loop's packages, never from the engines or
the evaluator. :data:`ALLOWED` names, for each package, every package it may import; a new arrow
is a decision made here, in review, not by accident. The package map in docs/development.md
says the same in words.
"""

from __future__ import annotations

import ast
import functools
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import alphaloop

ROOT = Path(alphaloop.__file__).parent

# Usable from anywhere (each imports no other package but these): errors, settings, the
# lazy-import helpers, tracing, the evidence models a pick is judged on, the words a session is
# described in, the session's spec and the walk's (their schemas: the journal stores them typed).
SHARED = {
    "exceptions",
    "settings",
    "_lazy",
    "telemetry",
    "evidence",
    "vocabulary",
    "spec",
    "walk_spec",
}
FOUNDATIONS = {"knobs", "market", "metrics"}
ENGINES = {"pipeline", "rl_engine", "portfolio_opt"}
FRONT_ENDS = {"cli", "server", "tools", "chat", "scheduler"}
# What the chat front end talks to the chat model with: not research, so not behind ops.
CHAT_TRANSPORT = {"llm", "llm_json", "prompts"}

# package -> the alphaloop packages it may import (besides itself).
ALLOWED: dict[str, set[str]] = {
    # shared and foundations
    "exceptions": set(),
    "settings": set(),
    "_lazy": set(),
    "telemetry": {"settings"},
    "evidence": set(),
    "vocabulary": set(),
    "spec": {"vocabulary"},
    "walk_spec": {"spec"},
    "knobs": {"exceptions"},
    "market": {"exceptions", "settings"},
    "metrics": {"exceptions"},
    "llm_json": {"exceptions"},
    "prompts": set(),
    # engines: no journal, no evaluator, no loop
    "portfolio_opt": {"exceptions", "metrics", "knobs"},
    "rl_engine": {"_lazy", "exceptions", "knobs", "metrics"},
    "pipeline": {"exceptions", "knobs", "portfolio_opt", "rl_engine"},
    # the frozen evaluator: engines and foundations only
    "trials": {"exceptions", "settings", "knobs", "market", "metrics", *ENGINES},
    # where trials run (this process, worker processes, a Ray cluster): the evaluator, never
    # the loop, the session or the journal
    "placement": {"exceptions", "settings", "knobs", "market", "metrics", "trials"},
    # the journal stores rows; it knows the knobs' types and nothing above them
    "journal": {"exceptions", "knobs"},
    "llm": {"exceptions", "settings", "telemetry", "llm_json"},
    # what the operations layer composes
    "validation": {"exceptions", "knobs", "market", "metrics", "trials"},
    # the validation chart draws the validation report
    "charts": {
        "exceptions",
        "settings",
        "telemetry",
        "journal",
        "llm",
        "market",
        "metrics",
        "validation",
    },
    "library": {"exceptions", "settings", "journal", "knobs", "market", "trials"},
    "broker": {"exceptions", "settings", "journal"},
    "pm": {
        "exceptions",
        "settings",
        "broker",
        "journal",
        "knobs",
        "library",
        "market",
        "metrics",
        "pipeline",
        "portfolio_opt",
        "trials",
    },
    "meta_agent": {
        "exceptions",
        "settings",
        "telemetry",
        "journal",
        "knobs",
        "library",
        "llm",
        "llm_json",
        "market",
        "metrics",
        "placement",
        "prompts",
        "trials",
        "validation",
    },
    "flywheel": {
        "exceptions",
        "settings",
        "journal",
        "knobs",
        "market",
        "meta_agent",
        "metrics",
        "validation",
    },
    # the walk: the loop replayed over history, one session per epoch
    "walk": {
        "exceptions",
        "settings",
        "flywheel",
        "journal",
        "knobs",
        "market",
        "meta_agent",
        "metrics",
        "placement",
        "trials",
        "validation",
    },
    "ops": {
        "exceptions",
        "settings",
        "telemetry",
        "_lazy",
        "broker",
        "charts",
        "flywheel",
        "journal",
        "knobs",
        "library",
        "market",
        "meta_agent",
        "metrics",
        "placement",
        "pm",
        "portfolio_opt",
        "rl_engine",
        "trials",
        "validation",
        "walk",
    },
    # front ends: through ops only. The chat's own transport (the LLM client and its prompts)
    # is the one thing below ops they may hold: ops never talks to the chat model.
    "server": {"exceptions", "settings", "ops"},
    "tools": {"exceptions", "settings", "llm", "ops"},
    "chat": {"exceptions", "settings", "llm", "ops", "prompts", "tools"},
    "scheduler": {"exceptions", "settings", "ops"},
    "cli": {"exceptions", "settings", "chat", "ops", "scheduler", "server"},
}


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


@functools.cache  # the sources do not change during a run; every check reads the one graph
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


def _module_imports(path: Path, module: str, modules: set[str]) -> Iterator[str]:
    """The alphaloop modules ``path`` imports, at any depth of the file. ``from x import y`` is
    an arrow to ``x.y`` when that is a module, else to ``x`` (``y`` is a name defined there)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names if a.name in modules)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against this module's package
                base = module.split(".")
                base = base[: len(base) - node.level + (path.name == "__init__.py")]
                source = ".".join([*base, node.module] if node.module else base)
            else:
                source = node.module or ""
            for alias in node.names:
                if f"{source}.{alias.name}" in modules:
                    yield f"{source}.{alias.name}"
                elif source in modules:
                    yield source


@functools.cache
def module_graph() -> dict[str, set[str]]:
    """Every alphaloop module -> the other alphaloop modules it imports."""
    paths = dict(_modules())
    return {
        module: set(_module_imports(path, module, set(paths))) - {module}
        for module, path in paths.items()
    }


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles of ``graph``: each set of two or more nodes that all reach each other
    (a strongly connected component, Tarjan's algorithm), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            members = stack[stack.index(node) :]
            del stack[stack.index(node) :]
            if len(members) > 1:
                found.append(sorted(members))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


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


def test_circles_finds_every_circle_and_nothing_else() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": {"e"}, "e": {"d"}, "f": {"a"}}
    assert circles(graph) == [["a", "b", "c"], ["d", "e"]]
    assert circles({"a": {"b"}, "b": set(), "c": {"a", "b"}}) == []


def test_the_module_graph_sees_lazy_imports_and_submodules() -> None:
    graph = module_graph()
    # ``from alphaloop.server import routes_flywheel`` inside a function: an arrow to the module
    assert "alphaloop.server.routes_flywheel" in graph["alphaloop.server.app"]
    assert "alphaloop.server" not in graph["alphaloop.server.app"]
    # ``from alphaloop.exceptions import X``: an arrow to the module that defines X
    assert "alphaloop.exceptions" in graph["alphaloop.ops.jobs"]


def test_no_circle_between_modules() -> None:
    """No two alphaloop modules import each other, directly or around a circle, at any depth of
    their files (a lazy import inside a function is still an arrow)."""
    found = circles(module_graph())
    assert found == [], "import circles: " + " | ".join(" <-> ".join(c) for c in found)


def test_the_allowed_arrows_point_one_way() -> None:
    assert _cycle(ALLOWED) is None


@pytest.mark.parametrize("package", sorted(SHARED))
def test_shared_modules_import_only_each_other(package: str) -> None:
    assert package_graph().get(package, set()) <= SHARED


def test_every_package_is_placed_in_the_map() -> None:
    assert set(package_graph()) <= set(ALLOWED)


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_a_package_imports_only_what_the_map_allows(package: str) -> None:
    wrong = package_graph().get(package, set()) - ALLOWED[package] - SHARED
    assert not wrong, f"alphaloop.{package} imports {sorted(wrong)}, not in its arrows"


@pytest.mark.parametrize("package", sorted(ENGINES | {"trials", "placement"}))
def test_engines_and_the_evaluator_never_touch_the_journal_or_the_loop(package: str) -> None:
    assert not ALLOWED[package] & {"journal", "meta_agent", "ops", *FRONT_ENDS}


@pytest.mark.parametrize("package", sorted(FRONT_ENDS))
def test_front_ends_run_research_only_through_ops(package: str) -> None:
    engines = {"meta_agent", "trials", "validation", "charts", "market", "pm", *ENGINES}
    assert not ALLOWED[package] & engines


@pytest.mark.parametrize("package", sorted(FRONT_ENDS))
def test_front_ends_reach_the_journal_and_all_below_ops_only_through_ops(package: str) -> None:
    """A front end imports ops (and other front ends, and the shared modules), never the
    journal, the knobs or anything else ops composes: every read and rule is an ops function."""
    below = set(ALLOWED) - FRONT_ENDS - SHARED - CHAT_TRANSPORT - {"ops"}
    assert "journal" in below and "knobs" in below
    imported = package_graph().get(package, set())
    assert not (imported | ALLOWED[package]) & below, f"alphaloop.{package} goes around ops"


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


@pytest.mark.parametrize("module", ["alphaloop.rl_engine.env_core", "alphaloop.rl_engine.env"])
def test_an_engine_module_imported_first_registers_the_env_without_a_cycle(module: str) -> None:
    """Registering on gymnasium's import must not import the env's module: that import may be
    the one a module the env needs started, half-way through its own."""
    loaded = _loaded_after(
        f"import {module}, gymnasium; from alphaloop.rl_engine import ENV_ID; "
        "assert ENV_ID in gymnasium.registry; gymnasium.make(ENV_ID)"
    )
    assert "gymnasium" in loaded


def test_the_design_page_names_files_that_exist() -> None:
    """docs/design.md, which this map is the test of, answers "where is X?" with one file each:
    every file it names is in the repository."""
    page = (ROOT.parent / "docs" / "design.md").read_text(encoding="utf-8")
    named = set(re.findall(r"`((?:alphaloop|tests)/[\w/]+\.py)`", page))
    assert len(named) >= 10
    assert sorted(p for p in named if not (ROOT.parent / p).is_file()) == []


def test_ops_exports_exactly_its_public_modules() -> None:
    """``alphaloop.ops`` lists its modules by name (each loaded on first use): no name of a
    module that is gone, none left out."""
    from alphaloop import ops

    modules = {p.stem for p in (ROOT / "ops").glob("*.py") if not p.stem.startswith("_")}
    assert set(ops.__all__) == modules
    named = set(re.findall(r"``(\w+)``", (ops.__doc__ or "").split("Modules:")[1]))
    assert named == modules  # the docstring's list of modules, too
