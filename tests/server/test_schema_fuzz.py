"""schemathesis reads the API's own OpenAPI document, as a client generator or a gateway would,
and fuzzes the app in process (ASGI) with every check: no server error, every status and body
as declared, schema-invalid requests refused, schema-valid ones accepted, ``Allow`` on 405s,
resources that a link says exist found. Then the stateful phase follows the links the document
declares (a halt to the book's status and resume, a note saved to its reading).

The home holds a session with trials, an active policy, a book with a decision to judge. Its
server runs no jobs (``ALPHALOOP_MAX_JOBS=0``: a start is refused with 409 before anything is
journaled), so fuzzing forks no worker process; the job path itself is run for real by the
generated client's test (``test_generated_client.py``). Examples are bounded per operation (the
frontier's fewer: each valid one traces a frontier).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase
from hypothesis import settings as examples

from alphaloop import library
from alphaloop.journal import Journal
from alphaloop.server import create_app
from alphaloop.settings import Settings

from .helpers import PAGE, add_trials, new_session

pytestmark = pytest.mark.slow

EXAMPLES = 12  # per operation; the stateful phase runs as many step sequences
SLOWEST_S = 120  # a frontier of hundreds of certified points takes seconds on a busy machine
BOUNDED = examples(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,  # the same requests on every run: a failure is reproducible
    database=None,  # no .hypothesis folder left behind
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)
# A valid frontier request traces up to 500 certified points, and the fuzz's first phase already
# sends both edges of every bound (500 points accepted, 501 refused; 100,000 scenarios and
# 100,001) and a wrong type for each: the random examples beyond those are fewer here (they took
# about half of the module's time).
FRONTIER = "/api/frontier"
FRONTIER_EXAMPLES = 3
BOUNDED_FRONTIER = examples(BOUNDED, max_examples=FRONTIER_EXAMPLES)


def _home(root: Path) -> Settings:
    from tests.flywheel.helpers import add_decision
    from tests.pm.helpers import add_policy

    settings = APP.state.settings.model_copy(update={"home": root / "home"})
    settings.home.mkdir(parents=True)
    with Journal(settings.journal_path) as j:
        sid = new_session(j, budget=20)
        add_trials(j, sid, 6)
        library.activate(j, settings, add_policy(j, settings, "mean_cvar").id)
        j.books.create("main", "paper", 100_000.0)
        add_decision(j, date="2022-06-01", symbols=["AAPL", "MSFT"], pre=None, target={"AAPL": 1})
    return settings


# The app and its document, as a client meets them; the home it serves is made for the module
# (below), before any request. The in-process client calls itself "testserver": a name the
# guard is told to answer.
APP = create_app(
    Settings().model_copy(
        update={"home": Path("fuzzed-home"), "max_jobs": 0, "allowed_hosts": "testserver"}
    )
)
schema = schemathesis.openapi.from_asgi("/openapi.json", APP)
# A request valid by the schema may still break a rule the schema cannot state (a day the data
# has no close for, a rule across fields): it is refused with 422, as the document says.
schema.config.checks.positive_data_acceptance.expected_statuses += ["422"]


@pytest.fixture(scope="module", autouse=True)
def fuzzed_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Settings]:
    home = _home(tmp_path_factory.mktemp("fuzz"))
    APP.state.settings = home
    yield home


@schema.exclude(path=FRONTIER).parametrize()
@BOUNDED
def test_every_operation_keeps_the_document_s_contract(case: Any) -> None:
    case.call_and_validate(headers=PAGE, timeout=SLOWEST_S)


@schema.include(path=FRONTIER).parametrize()
@BOUNDED_FRONTIER
def test_the_frontier_keeps_the_document_s_contract(case: Any) -> None:
    case.call_and_validate(headers=PAGE, timeout=SLOWEST_S)


def test_linked_calls_keep_the_contract() -> None:
    machine = schema.as_state_machine()

    class Linked(machine):  # type: ignore[misc, valid-type]
        def get_call_kwargs(self, case: Any) -> dict[str, Any]:
            return {"headers": PAGE, "timeout": SLOWEST_S}

    Linked.run(
        settings=examples(
            max_examples=EXAMPLES,
            stateful_step_count=6,
            deadline=None,
            derandomize=True,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
    )
