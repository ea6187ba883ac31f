"""The user's limits travel with the policy: a session's drawdown limit is the drawdown gate on
TEST and the default drawdown limit of the policy's kill switch, which a book setting may only
tighten."""

from __future__ import annotations

from alphaloop.journal import Journal
from alphaloop.meta_agent.finalize import _overfitting
from alphaloop.metrics import Metrics
from alphaloop.ops.pm import _limits
from alphaloop.settings import Settings
from alphaloop.spec import Objective
from alphaloop.validation import Gates
from alphaloop.validation.report import selection
from tests.pm.helpers import add_policy

TEST = Metrics(
    sharpe=1.5, sortino=2.0, calmar=1.0, max_drawdown=0.248, cvar_95=-0.02, volatility=0.15,
    annual_return=0.2, total_return=0.2, annual_turnover=2.0, hit_rate=0.55,
    profit_factor=1.3, n_days=252,
)  # fmt: skip


def _drawdown_gate(limit: float | None) -> dict:
    final = {"best_trial_id": 1, "best_test": TEST.model_dump()}
    out = _overfitting(selection(None, []), final, {}, Gates().within(limit))
    (gate,) = [g for g in out["gates"]["results"] if g["gate"] == "max_drawdown"]
    return gate


def test_the_sessions_drawdown_limit_is_a_gate_on_test() -> None:
    assert _drawdown_gate(None)["passed"]  # 24.8% is within the default 30%
    user = _drawdown_gate(0.15)
    assert not user["passed"] and "15.0%" in str(user)


def test_the_kill_switch_starts_from_the_policys_limit_and_a_book_only_tightens_it(
    settings: Settings,
) -> None:
    settings.home.mkdir(parents=True)
    with Journal(settings.journal_path) as journal:
        policy = add_policy(journal, settings, "mean_cvar")
    limited = policy.model_copy(update={"objective": Objective(max_drawdown=0.15)})
    assert settings.pm_max_drawdown == 0.25
    assert _limits(settings, policy).max_drawdown == 0.25  # no stated limit: the book's
    assert _limits(settings, limited).max_drawdown == 0.15  # the session's limit holds
    looser = settings.model_copy(update={"pm_max_drawdown": 0.5})
    assert _limits(looser, limited).max_drawdown == 0.15  # a book cannot loosen it
    tighter = settings.model_copy(update={"pm_max_drawdown": 0.1})
    assert _limits(tighter, limited).max_drawdown == 0.1  # ... only tighten it
