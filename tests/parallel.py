"""Running the suite on several cores (pytest-xdist, as ``make test`` does with ``-n auto --dist
loadgroup``): which tests share a worker, and what a worker must not inherit.

Each worker builds the module- and session-scoped fixtures of the tests it gets. So a test
module whose tests share one of this suite's fixtures of module scope or wider goes to one
worker whole (the fixture is built once), modules sharing a session fixture go to the same
worker, and every test marked ``heavy`` goes to one worker (two never run at once), by
``xdist_group`` marks added at collection. Session fixtures in :data:`OWN_PER_WORKER` are built
by each worker for itself: cheap, or shared across workers through a file lock.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator

import pytest

# An autouse session fixture missing here would put every test in its group, on one worker.
OWN_PER_WORKER = frozenset({"_default_home", "_sb3_log_folder", "finished_session"})

# GNU readline, once anything in pytest's process imports it, exports the terminal's size (80
# columns when there is none) to every process started after, the workers among them; Rich
# would fix the command line's console at that width when it is made. A test sets COLUMNS
# itself where the width matters.
for _name in ("COLUMNS", "LINES"):
    os.environ.pop(_name, None)


def _group_of(path: str, module: list[pytest.Item]) -> str | None:
    """The worker group of a test module's tests: ``heavy``, the name of a session fixture of
    this suite they use, the module's own path if they share a module fixture, or None."""
    if any(item.get_closest_marker("heavy") for item in module):
        return "heavy"
    shared: set[str] = set()
    for item in module:
        for name, defs in item._fixtureinfo.name2fixturedefs.items():
            fixture = defs[-1]
            if not fixture.baseid or name in OWN_PER_WORKER:  # a plugin's, or per worker
                continue
            if fixture.scope == "session":
                shared.add(name)
            elif fixture.scope != "function":
                shared.add(path)
    # A session fixture names the group before a module's own: other modules may share it.
    return min(shared, key=lambda name: (name == path, name)) if shared else None


@pytest.hookimpl(wrapper=True, tryfirst=True)  # the marks go on before xdist's hook reads them
def pytest_collection_modifyitems(
    config: pytest.Config, items: list[pytest.Item]
) -> Iterator[None]:
    modules: dict[str, list[pytest.Item]] = {}
    for item in items:
        modules.setdefault(item.nodeid.split("::")[0], []).append(item)
    for path, module in modules.items():
        group = _group_of(path, module)
        if group is not None:
            for item in module:
                item.add_marker(pytest.mark.xdist_group(group))
    yield
    # --dist loadgroup keys tests by their ids (a group rides in the id as "@group"): a pytest
    # that drops it, or two tests of one id, would spread a group or skip a test unseen.
    if getattr(config.option, "loadgroup", False):
        lost = [item.nodeid for item in items if item.get_closest_marker("xdist_group")
                and "@" not in item.nodeid.rsplit("]", 1)[-1]]  # fmt: skip
        twice = [i for i, n in Counter(item.nodeid for item in items).items() if n > 1]
        if lost or twice:
            raise pytest.UsageError(
                f"--dist loadgroup cannot place these tests: ids without their group {lost[:3]},"
                f" ids shared by two tests {twice[:3]}"
            )
