"""The session's pick on hand-built daily series with a known answer: the strict rule (StepM
against the default over every config tried), also when the default breaks the limits, and the
lenient rule; and the TEST evaluations handed to the workers together."""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from alphaloop.knobs import TrialConfig
from alphaloop.meta_agent import finalize, folding
from alphaloop.metrics import compute_metrics
from alphaloop.placement import TrialOutcome
from alphaloop.spec import Objective
from alphaloop.validation.pick_rule import PickRule
from tests.meta_agent.helpers import session_context

N_DAYS = 2268  # three folds of three years


def _row(idx: int, kind: str, status: str, returns: np.ndarray, score: float) -> Any:
    metrics = compute_metrics(returns, np.zeros(returns.size)).model_dump()
    return SimpleNamespace(
        id=100 + idx, idx=idx, kind=kind, status=status, val_returns=list(returns),
        objective=score, score=score, metrics=metrics,
    )  # fmt: skip


def _session(
    monkeypatch: pytest.MonkeyPatch, edges: dict[int, float], n: int = 12, seed: int = 0
) -> tuple[Any, list[Any]]:
    """A baseline of three seeds and ``n`` search configs on the same days; config ``i`` beats
    the default by ``edges[i]`` of annualised Sharpe, the others tie with it. Kept: the configs
    with an edge and three without. A row's daily returns are its seeds' mean (no confirmation
    rows), read by the pick as the journal's folds would be."""
    rng = np.random.default_rng(seed)
    market = rng.normal(0.0004, 0.01, N_DAYS)
    rows = [_row(i, "baseline", "keep", market + rng.normal(0, 1e-4, N_DAYS), 1.0)
            for i in range(3)]  # fmt: skip
    for i in range(n):
        x = market + rng.normal(0.0, 0.004, N_DAYS)
        x = x + edges.get(i, 0.0) * x.std() / math.sqrt(252)
        kept = i in edges or i < 3
        rows.append(_row(10 + i, "search", "keep" if kept else "discard", x, 1.0 + 0.01 * i))
    monkeypatch.setattr(folding, "fold_returns", lambda ctx, t, folds=None: t.val_returns)
    monkeypatch.setattr(folding, "confirmations", lambda ctx, trial_id: [])
    return SimpleNamespace(spec=SimpleNamespace(objective=Objective())), rows


def test_the_strict_rule_picks_a_real_edge_and_not_the_best_of_ties(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ctx, rows = _session(monkeypatch, {4: 1.5})
    best, why = finalize.pick(ctx, rows)
    assert best is not None and best.idx == 14
    assert "trial 14 beats the default" in why and "StepM step 1, 12 configs" in why
    # Ties only: the kept configs ranked first by score are noise, and the default is the pick.
    ctx, rows = _session(monkeypatch, {})
    best, why = finalize.pick(ctx, rows)
    assert best is None
    assert why.startswith("no improvement found: none of the 3 kept search trial(s)")
    assert "family-wise 0.05 over the 12 configs tried (StepM)" in why


def test_the_strict_rule_tests_the_pick_when_the_default_breaks_the_limits(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The former rule took the top kept trial with no test when the default broke a limit.
    ctx, rows = _session(monkeypatch, {})
    ctx.spec.objective = Objective(max_drawdown=0.05)
    for t in rows:  # the default breaks the limit; every search config keeps within it
        t.metrics = dict(t.metrics, max_drawdown=0.2 if t.kind == "baseline" else 0.01)
    best, why = finalize.pick(ctx, rows)
    assert best is None
    assert "the default breaks the limits (max drawdown 20.0% exceeds" in why
    ctx, rows = _session(monkeypatch, {5: 1.5})
    ctx.spec.objective = Objective(max_drawdown=0.05)
    for t in rows:
        t.metrics = dict(t.metrics, max_drawdown=0.2 if t.kind == "baseline" else 0.01)
    best, why = finalize.pick(ctx, rows)
    assert best is not None and best.idx == 15 and "beats the default" in why


def test_the_lenient_rule_takes_the_best_estimate_scored_on_every_fold(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ctx, rows = _session(monkeypatch, {})
    lenient = PickRule(rule="lenient")
    best, why = finalize.pick(ctx, rows, lenient)
    assert best is not None and best.idx == 21  # the highest score: no test
    assert "the best estimate" in why and "no test" in why
    raced = rows[-1]  # raced out after its latest fold: not fully scored
    raced.val_returns, raced.score = raced.val_returns[-756:], 9.0
    assert finalize.pick(ctx, rows, lenient)[0].idx == 20  # type: ignore[union-attr]
    for t in rows:
        if t.kind == "baseline":
            t.objective = t.score = 5.0  # the default's score is the best
    best, why = finalize.pick(ctx, rows, lenient)
    assert best is None and "the best estimate is the default" in why


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
