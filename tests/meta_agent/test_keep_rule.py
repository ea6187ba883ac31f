"""The keep rule's statistics against scipy's t distribution, and the verdict on hand-built
journal rows (no trial runs: the outcome and the history are written by the test)."""

from __future__ import annotations

import math
import statistics
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats

from alphaloop.journal import Journal, best_trial
from alphaloop.knobs import ConfigDelta, TrialConfig
from alphaloop.meta_agent import keep_rule, nodes, session
from alphaloop.meta_agent.keep_rule import Noise, SeedMean, t_margin
from alphaloop.meta_agent.proposers import ProposalContext, RandomProposer
from alphaloop.meta_agent.recording import finished_trials
from alphaloop.meta_agent.session import SessionSpec, create_session, run_session
from alphaloop.meta_agent.state import SessionContext
from alphaloop.metrics import Metrics
from alphaloop.placement import OutcomeStatus, TrialOutcome
from alphaloop.placement import jobs as trial_jobs
from alphaloop.settings import Settings
from alphaloop.spec import Objective
from alphaloop.trials import TrialResult

from .helpers import session_context


@pytest.mark.parametrize("dof", [1, 2, 4, 19])
@pytest.mark.parametrize(("n_c", "n_i"), [(1, 3), (3, 3), (3, 1), (5, 20)])
@pytest.mark.parametrize("alpha", [0.05, 0.10])
def test_the_margin_is_the_one_sided_t_quantile_times_the_standard_error(
    dof: int, n_c: int, n_i: int, alpha: float
) -> None:
    expected = stats.t.isf(alpha, dof) * 0.04 * math.sqrt(1 / n_c + 1 / n_i)
    assert t_margin(0.04, dof, n_c, n_i, alpha) == pytest.approx(expected, rel=1e-12)


def test_no_spread_estimated_means_no_finite_margin_and_bad_input_is_refused() -> None:
    assert t_margin(0.0, 0, 1, 1, 0.05) == math.inf
    assert t_margin(0.0, 2, 3, 3, 0.05) == 0.0  # a deterministic mode: any gain is real
    with pytest.raises(ValueError, match="seed counts must be >= 1"):
        t_margin(0.1, 2, 0, 3, 0.05)
    with pytest.raises(ValueError, match=r"alpha must be in \(0, 1\)"):
        t_margin(0.1, 2, 1, 3, 1.0)


def test_the_false_keep_rate_of_a_seed_only_change_is_at_most_the_keep_alpha() -> None:
    """Monte Carlo of the two steps on normal seed noise (the t-test's model): a candidate
    with the incumbent's true mean is kept at most KEEP_ALPHA of the time, the old "2 x
    spread" bar lets about 11% through with 3 seeds, and a gain of 5 spreads is kept >= 90%."""
    rng = np.random.default_rng(7)
    n, k, draws = 3, keep_rule.CONFIRM_SEEDS, 40_000
    base = rng.normal(0.0, 1.0, (draws, n))
    s, m = base.std(axis=1, ddof=1), base.mean(axis=1)

    def kept(gain: float) -> tuple[float, float]:
        seeds = rng.normal(gain, 1.0, (draws, 1 + k))
        first = seeds[:, 0] - m > t_margin(1.0, n - 1, 1, n, keep_rule.SCREEN_ALPHA) * s
        final = seeds.mean(axis=1) - m > t_margin(1.0, n - 1, 1 + k, n, keep_rule.KEEP_ALPHA) * s
        return float(np.mean(first & final)), float(np.mean(seeds[:, 0] - m > 2 * s))

    new, old = kept(0.0)
    assert new <= keep_rule.KEEP_ALPHA and 0.09 < old < 0.14
    assert kept(5.0)[0] >= 0.90


def test_comparisons_state_their_numbers() -> None:
    noise = Noise.of([1.0, 1.1, 1.2])
    assert (noise.dof, noise.spread) == (2, pytest.approx(0.1))
    incumbent = SeedMean.of([1.0, 1.1, 1.2])
    done = keep_rule.confirmed([1.5, 1.52, 1.54], incumbent, noise)
    margin = stats.t.isf(0.05, 2) * 0.1 * math.sqrt(2 / 3)
    assert done.passed and done.margin == pytest.approx(margin)
    assert done.describe() == (
        f"mean 1.5200 over 3 seeds beats 1.1000 (mean over 3 seeds) by 0.4200 > "
        f"t-margin {margin:.4f} (confirmed, alpha 0.05, 2 dof)"
    )
    first = keep_rule.screen(1.2, incumbent, noise)
    assert not first.passed
    assert first.describe().startswith("1.2000 does not beat 1.1000 (mean over 3 seeds) by more")
    lone = keep_rule.screen(9.0, SeedMean(mean=1.0, n=1), Noise.of([1.0]))
    assert not lone.passed and "no seed noise could be estimated" in lone.describe()
    assert keep_rule.seed_count_note(3) is None
    assert "1 degree of freedom" in keep_rule.seed_count_note(2)


# --- the verdict on hand-built rows ---------------------------------------------------------


# The days every row of these sessions is scored on: the default's daily returns, and a
# candidate's with a clear edge (+10 bp a day) or none at all (the same days: window luck).
DAYS = np.random.default_rng(7).normal(3e-4, 0.01, 750)
EDGE = DAYS + 1e-3


def result(objective: float, drawdown: float = 0.1, returns: Any = EDGE) -> TrialResult:
    figures = dict.fromkeys(Metrics.model_fields, 0.0)
    metrics = Metrics(**{**figures, "n_days": 3, "sharpe": objective, "max_drawdown": drawdown})
    return TrialResult(
        mode="cufolio_only",
        window="validation",
        metric="sharpe",
        objective=objective,
        metrics=metrics,
        baselines={},
        daily_returns=[float(x) for x in returns],
        final_weights=[1.0],
        elapsed_s=0.1,
        seed=0,
        config_hash="x",
        data_fingerprint="fp",
        start_date="2017-01-01",
        end_date="2019-12-31",
    )


@pytest.fixture
def ctx(tmp_path: Path) -> Any:
    context = session_context(tmp_path, objective=Objective(max_drawdown=0.2))
    yield context
    context.journal.close()


def write(ctx: SessionContext, kind: str, objective: float | None, **fields: Any) -> int:
    """A finished row of ``kind`` with ``objective`` (None: a crash); returns its id."""
    row = ctx.journal.trials.start(
        ctx.session_id,
        kind=kind,
        config=TrialConfig().model_dump(),
        config_hash=None,
        delta={"changes": {}},
        parent_id=fields.pop("parent_id", None),
        seed=fields.pop("seed", 0),
        rationale=None,
        proposer=None,
    )
    if objective is None:
        ctx.journal.trials.finish(row.id, status="crash", error="boom")
    else:
        status = fields.pop("status", "keep")
        default = DAYS if kind == "baseline" else EDGE
        fields.setdefault("val_returns", [float(x) for x in default])
        ctx.journal.trials.finish(row.id, status=status, objective=objective, **fields)
    return row.id


def candidate(
    ctx: SessionContext, objective: float, returns: Any = EDGE
) -> tuple[int, TrialOutcome]:
    row = ctx.journal.trials.start(
        ctx.session_id,
        kind="search",
        config=TrialConfig().model_dump(),
        config_hash=None,
        delta={"changes": {}},
        parent_id=None,
        seed=0,
        rationale=None,
        proposer="random",
    )
    return row.id, TrialOutcome(status=OutcomeStatus.ok, result=result(objective, returns=returns))


BASE = [1.0, 1.1, 1.2]  # mean 1.1, spread 0.1, 2 dof


def test_a_candidate_short_of_the_screen_is_discarded_without_confirmation(ctx: Any) -> None:
    for y in BASE:
        write(ctx, "baseline", y)
    screen_bar = 1.1 + stats.t.isf(0.10, 2) * 0.1 * math.sqrt(1 + 1 / 3)
    trial_id, outcome = candidate(ctx, screen_bar - 1e-6)
    assert nodes.screened(ctx, outcome).passed is False
    found = nodes.verdict(ctx, trial_id, outcome)
    assert (found.status, found.seeds) == ("discard", None)
    assert "(screen, alpha 0.1, 2 dof)" in found.reason
    _, above = candidate(ctx, screen_bar + 1e-6)
    assert nodes.screened(ctx, above).passed is True


@pytest.mark.parametrize(("confirms", "status"), [([1.5, 1.5], "keep"), ([1.0, 1.1], "discard")])
def test_a_screened_candidate_is_judged_on_its_mean_over_its_seeds(
    ctx: Any, confirms: list[float], status: str
) -> None:
    for y in BASE:
        write(ctx, "baseline", y)
    trial_id, outcome = candidate(ctx, 1.6)
    for seed, y in zip(ctx.confirm_seed_range, confirms, strict=True):
        write(ctx, "confirm", y, parent_id=trial_id, seed=seed)
    found = nodes.verdict(ctx, trial_id, outcome)
    ys = [1.6, *confirms]
    margin = stats.t.isf(0.05, 2) * 0.1 * math.sqrt(1 / 3 + 1 / 3)
    assert (statistics.fmean(ys) - 1.1 > margin) == (status == "keep")
    assert found.status == status
    assert found.seeds == SeedMean(mean=statistics.fmean(ys), n=3)
    assert f"t-margin {margin:.4f} (confirmed, alpha 0.05, 2 dof)" in found.reason
    if status == "keep":
        assert "over the incumbent on the same 750 days of 1 fold (se" in found.reason


def test_a_seed_mean_that_wins_on_no_day_is_window_luck_and_discarded(ctx: Any) -> None:
    for y in BASE:
        write(ctx, "baseline", y)
    trial_id, outcome = candidate(ctx, 1.6, returns=DAYS)  # the seeds agree; the days do not
    for seed in ctx.confirm_seed_range:
        write(ctx, "confirm", 1.5, parent_id=trial_id, seed=seed, val_returns=list(DAYS))
    found = nodes.verdict(ctx, trial_id, outcome)
    assert found.status == "discard"
    # The test that decided comes first (a table cuts a long reason at its end).
    deciding, seeds = found.reason.split("; ")
    assert deciding.startswith("Sharpe +0.00 over the incumbent on the same 750 days of 1 fold")
    assert deciding.endswith(
        "is not significant (se 0.00, p 0.500 >= 0.05): window luck not ruled out"
    )
    assert seeds.endswith("(confirmed, alpha 0.05, 2 dof)")


def test_a_raced_out_trial_is_discarded_for_it_and_never_confirmed(ctx: Any) -> None:
    for y in BASE:
        write(ctx, "baseline", y)
    trial_id, outcome = candidate(ctx, 9.0)
    raced = outcome.model_copy(update={"raced_out": "raced out on fold 3 of 3"})
    assert nodes.screened(ctx, raced) is None
    assert nodes.verdict(ctx, trial_id, raced).reason == "raced out on fold 3 of 3"


def test_a_kept_trial_is_the_bar_with_its_mean_over_its_seeds(ctx: Any) -> None:
    for y in BASE:
        write(ctx, "baseline", y)
    # Kept: first seed 1.9 (lucky), mean 1.5 over 3 seeds. Its mean is the bar, not 1.9.
    write(ctx, "search", 1.9, status="keep", n_seeds=3, seed_mean=1.5)
    _, outcome = candidate(ctx, 1.8)
    first = nodes.screened(ctx, outcome)
    assert first.incumbent == SeedMean(mean=1.5, n=3)
    assert first.margin == pytest.approx(stats.t.isf(0.10, 2) * 0.1 * math.sqrt(1 + 1 / 3))
    best = best_trial(finished_trials(ctx))
    assert best is not None and best.score == 1.5  # what the proposer is told


def test_a_failed_confirmation_discards_and_limits_still_rule(ctx: Any) -> None:
    for y in BASE:
        write(ctx, "baseline", y)
    trial_id, outcome = candidate(ctx, 1.6)
    write(ctx, "confirm", None, parent_id=trial_id, seed=3)
    write(ctx, "confirm", 1.6, parent_id=trial_id, seed=4)
    found = nodes.verdict(ctx, trial_id, outcome)
    assert found.status == "discard"
    assert found.reason == "passed the screen, but its confirmation on seed 3 ended crash: boom"
    broke = TrialOutcome(status=OutcomeStatus.ok, result=result(9.0, drawdown=0.5))
    assert nodes.screened(ctx, broke) is None
    assert nodes.verdict(ctx, trial_id, broke).reason.startswith("max drawdown 50.0% exceeds")


# --- end to end: seed-only changes ------------------------------------------------------------


class SeedOnly(RandomProposer):
    """Proposes ``n_scenarios`` markers the wrapped evaluator runs as the default config on a
    seed of their own: every candidate is the baseline on another seed."""

    name = "seed-only"

    def __init__(self) -> None:
        super().__init__()
        self.j = 0

    def propose(self, ctx: ProposalContext) -> ConfigDelta:
        self.j += 1
        return ConfigDelta(changes={"n_scenarios": 5000 + self.j}, rationale="another seed")


def test_a_session_of_seed_only_changes_keeps_no_more_than_chance(
    tmp_path: Path, clean_env: pytest.MonkeyPatch
) -> None:
    real = trial_jobs.run_trial

    def run_trial(mode: str, config: TrialConfig, data: Any, budget: Any, seed: int, **kw: Any):
        j = config.n_scenarios - 5000
        return real(mode, TrialConfig(), data, budget, seed + 1000 * j if j > 0 else seed, **kw)

    clean_env.setattr(trial_jobs, "run_trial", run_trial)
    clean_env.setattr(session, "make_proposer", lambda *args: SeedOnly())
    settings = Settings(ALPHALOOP_HOME=str(tmp_path / "home"))
    spec = SessionSpec(goal="g", data="synthetic", budget=12, noise_seeds=3, seed=2)
    sid = create_session(spec, settings)
    run_session(sid, settings)
    with Journal(settings.journal_path) as journal:
        rows = journal.trials.of_session(sid, series=False)
    search = [t for t in rows if t.kind == "search"]
    base = [t.objective for t in rows if t.kind == "baseline"]
    lucky = [t for t in search if t.objective > statistics.fmean(base)]
    kept = [t for t in search if t.status == "keep"]
    assert len(search) == 12 and len(lucky) >= 4  # luck enough to fool a naive rule
    # At 5% a keep, 12 trials keep more than 2 less than 2% of the time (binomial).
    assert len(kept) <= 2 and stats.binom.sf(2, 12, keep_rule.KEEP_ALPHA) < 0.02
    assert all("(confirmed, alpha 0.05, 2 dof)" in t.reason for t in kept)
    confirms = [t for t in rows if t.kind == "confirm"]
    screened = {t.parent_id for t in confirms}
    assert len(confirms) == keep_rule.CONFIRM_SEEDS * len(screened)
    assert all(not t.counted for t in confirms)
