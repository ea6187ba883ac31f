"""How many tests the session's pick is one of, on hand-built daily series with a known answer;
and the TEST evaluations handed to the workers together."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from alphaloop.knobs import TrialConfig
from alphaloop.meta_agent import finalize
from alphaloop.meta_agent.finalize import configs_tried
from alphaloop.meta_agent.outcome import TrialOutcome
from alphaloop.validation.sharpe import effective_trials
from tests.meta_agent.helpers import session_context


def _search(series: np.ndarray) -> list[SimpleNamespace]:
    return [
        SimpleNamespace(kind="search", status="keep", val_returns=list(column))
        for column in series.T
    ]


def test_configs_that_each_differ_from_the_default_in_their_own_way_count_as_many() -> None:
    rng = np.random.default_rng(7)
    market = 0.01 * rng.standard_normal(2_000)
    # Six configs: the default's moves (every long-only book shares the market) plus
    # differences of their own, independent of each other.
    configs = market[:, None] + 0.002 * rng.standard_normal((2_000, 6))
    assert effective_trials(configs) < 3  # over returns they look like one or two configs
    assert configs_tried(_search(configs), market) == pytest.approx(6.0, abs=0.5)


def test_configs_that_differ_from_the_default_alike_count_as_one() -> None:
    rng = np.random.default_rng(8)
    market = 0.01 * rng.standard_normal(1_000)
    shared = 0.002 * rng.standard_normal(1_000)
    configs = market[:, None] + shared[:, None] * np.array([1.0, 2.0, 0.5])
    assert configs_tried(_search(configs), market) == pytest.approx(1.0)
    assert configs_tried([], market) == 1.0  # nothing tried: the test is one test


def test_only_the_days_all_share_count_and_other_kinds_of_row_are_not_candidates() -> None:
    rng = np.random.default_rng(9)
    market = 0.01 * rng.standard_normal(900)
    configs = market[:, None] + 0.002 * rng.standard_normal((900, 4))
    rows = _search(configs)
    rows[0].val_returns = rows[0].val_returns[-300:]  # raced out: its last fold only
    rows.append(SimpleNamespace(kind="baseline", status="keep", val_returns=list(market)))
    expected = effective_trials(configs[-300:] - market[-300:, None])
    assert configs_tried(rows, market) == pytest.approx(expected, rel=1e-12)


def test_the_test_evaluations_all_start_before_the_first_is_waited_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ctx = session_context(tmp_path)
    events: list[str] = []

    def started(kind: str, seed: int, parent: int | None = None) -> Any:
        config = TrialConfig(cvar_alpha=0.9 if kind == "search" else 0.95).model_dump()
        return ctx.journal.trials.start(
            ctx.session_id, kind=kind, config=config, config_hash=None, delta={"changes": {}},
            parent_id=parent, seed=seed, rationale=None, proposer=None,
        )  # fmt: skip

    def submit(_ctx: Any, row: Any, config: TrialConfig, **where: str) -> str:
        events.append(f"submit {row.parent_id} {where['window']}")
        return f"pending {row.parent_id}"

    def outcome_of(pending: str) -> TrialOutcome:
        events.append(f"wait {pending}")
        return TrialOutcome.failed(RuntimeError("worker gone"))

    monkeypatch.setattr(finalize.flight, "submit", submit)
    monkeypatch.setattr(finalize, "outcome_of", outcome_of)
    try:
        default, pick = started("baseline", 0), started("search", 1)
        tests = finalize._test_rows(ctx, {"default": default, "search": pick})
        assert events == [
            f"submit {default.id} test", f"submit {pick.id} test",
            f"wait pending {default.id}", f"wait pending {pick.id}",
        ]  # fmt: skip
        assert [tests["default"].parent_id, tests["search"].parent_id] == [default.id, pick.id]
        assert tests["default"].idx < tests["search"].idx  # journaled in the order given
        assert {t.status for t in tests.values()} == {"crash"}
        # A finalize run again (after a resume that found a new pick) keeps the test rows that
        # have an outcome, and runs only the evaluation that has none.
        events.clear()
        new_pick = started("search", 2)
        again = finalize._test_rows(ctx, {"default": default, "search": new_pick})
        assert events == [f"submit {new_pick.id} test", f"wait pending {new_pick.id}"]
        assert again["default"].id == tests["default"].id
        assert again["search"].parent_id == new_pick.id
    finally:
        ctx.journal.close()
