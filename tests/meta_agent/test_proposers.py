"""The embedded proposers (Optuna TPE and random search): seeded, stateless, inside the bounds
and the mode's knobs, and blind to the appeal of a trial that broke a limit."""

from __future__ import annotations

from typing import Any

import optuna
import pytest
from optuna.distributions import FloatDistribution, IntDistribution

from alphaloop.knobs import KNOBS, clip, knobs_for_mode
from alphaloop.meta_agent.proposers import (
    ProposalContext,
    RandomProposer,
    TPEProposer,
    distributions,
)
from alphaloop.meta_agent.proposers.search import _replayed
from tests.meta_agent.histories import context, history

MODES = ("ppo_only", "cufolio_only", "unified")
PROPOSERS = (TPEProposer, RandomProposer)


def test_distributions_follow_each_knobs_scale() -> None:
    dists = distributions("unified")
    assert set(dists) == set(KNOBS)
    assert set(distributions("cufolio_only")) == {
        "cvar_alpha",
        "max_position_pct",
        "n_scenarios",
        "cufolio_hold_days",
    }
    assert dists["learning_rate"] == FloatDistribution(1e-5, 1e-2, log=True)
    assert dists["n_steps"] == IntDistribution(64, 4096, log=True)
    assert dists["lookback"] == IntDistribution(5, 60)
    assert dists["ent_coef"] == FloatDistribution(0.0, 0.1)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("proposer", PROPOSERS)
@pytest.mark.parametrize("n_trials", [0, 12])  # TPE: random warm-up, then its density model
def test_same_seed_and_history_same_proposal(proposer: type, mode: str, n_trials: int) -> None:
    ctx = context(mode, history(mode, n_trials), seed=7)
    one = proposer()
    first = one.propose(ctx)
    assert one.propose(ctx) == first
    # A resumed session rebuilds the context from the journal (JSON) and a new proposer.
    rebuilt = ProposalContext.model_validate_json(ctx.model_dump_json())
    assert proposer().propose(rebuilt) == first
    assert first.changes
    assert proposer().propose(context(mode, history(mode, n_trials), seed=8)) != first
    longer = context(mode, history(mode, n_trials + 1), seed=7)
    assert proposer().propose(longer) != first


@pytest.mark.parametrize("mode", MODES)
def test_random_search_draws_what_a_replayed_study_draws(
    mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Random search skips replaying the history (its sampler never reads it): the proposals
    are those of a study with the history replayed, pending trials included."""
    views = history(mode, 40, seed=5)
    ctx = context(mode, views[:-3], seed=9).model_copy(update={"pending": views[-3:]})
    skipped = [RandomProposer().propose(ctx) for _ in range(2)]
    monkeypatch.setattr(RandomProposer, "reads_history", True)
    replayed = [RandomProposer().propose(ctx) for _ in range(2)]
    assert skipped == replayed and skipped[0].changes


def test_tpe_rationale_says_which_phase_it_is_in() -> None:
    # While TPE is warming up its draw is the random sampler's draw with the same seed; the
    # journaled rationale must say so exactly then. A crashed trial does not end the warm-up.
    mode = "cufolio_only"
    for n_views in range(5, 12):
        views = history(mode, n_views - 1)
        views[2] = views[2].model_copy(update={"status": "crash", "objective": None})
        ctx = context(mode, views)
        tpe = TPEProposer(n_startup_trials=8).propose(ctx)
        warming_up = tpe.changes == RandomProposer().propose(ctx).changes
        assert warming_up == (n_views - 1 < 8), n_views
        if warming_up:
            assert tpe.rationale == f"TPE warm-up: random draw {n_views} of 8"
        else:
            assert tpe.rationale == (
                f"TPE: most promising point under the density model of {n_views - 1} past trials"
            )


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("proposer", PROPOSERS)
def test_proposals_stay_inside_the_bounds_and_the_modes_knobs(proposer: type, mode: str) -> None:
    allowed = set(knobs_for_mode(mode))
    for seed in range(12):
        ctx = context(mode, history(mode, 10 if seed % 2 else 0, seed=seed), seed=seed)
        delta = proposer().propose(ctx)
        assert set(delta.changes) <= allowed, set(delta.changes) - allowed
        for name, value in delta.changes.items():
            k = KNOBS[name]
            assert k.low <= value <= k.high, (name, value)
            assert not k.is_int or float(value).is_integer(), (name, value)
            assert value != getattr(ctx.best_config, name)  # a delta carries changes only
        config, clips = clip(ctx.best_config, delta, n_assets=20, n_envs=4)
        # Only feasibility rules may move a proposal: never a bound, never a rounding.
        assert all(c.reason.startswith("infeasible") for c in clips), clips
        untouched = set(KNOBS) - allowed
        assert all(getattr(config, n) == getattr(ctx.best_config, n) for n in untouched)


class StudySpy:
    """Keeps the study each proposal builds."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.studies: list[optuna.Study] = []
        real = optuna.create_study

        def create_study(*args: Any, **kwargs: Any) -> optuna.Study:
            study = real(*args, **kwargs)
            self.studies.append(study)
            return study

        monkeypatch.setattr(optuna, "create_study", create_study)


def test_a_limit_breach_ranks_below_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    """How TPE's study is replayed (random search reads no history: see above)."""
    mode = "cufolio_only"
    views = history(mode, 10)
    top = max(v.objective for v in views)
    breach = views[4].model_copy(
        update={"objective": top + 5.0, "violation": "max drawdown 40.0% exceeds the limit 15.0%"}
    )
    crashed = views[5].model_copy(update={"status": "crash", "objective": None, "error": "boom"})
    running = views[6].model_copy(update={"status": "running", "objective": None})
    test_row = views[7].model_copy(update={"kind": "test", "objective": top + 9.0})
    views[4:8] = [breach, crashed, running, test_row]
    spy = StudySpy(monkeypatch)
    TPEProposer().propose(context(mode, views))
    [study] = spy.studies
    # The running trial and the test-window row are not part of the search history.
    done = [t for t in study.trials if t.state != optuna.trial.TrialState.RUNNING]
    assert len(done) == len(views) - 2
    values = [t.value for t in done if t.state == optuna.trial.TrialState.COMPLETE]
    assert min(values) == -1e6 and values.count(-1e6) == 1
    assert sorted(values)[1] > -1e6
    assert [t.state for t in done].count(optuna.trial.TrialState.FAIL) == 1
    legal_best = max((v for v in views[:4] + views[8:]), key=lambda v: v.objective)
    assert study.best_trial.value == legal_best.objective
    assert study.best_trial.params == {
        n: getattr(legal_best.config, n) for n in knobs_for_mode(mode)
    }


@pytest.mark.parametrize("mode", ["cufolio_only", "unified"])
def test_the_cheap_replay_gives_optunas_own_points(mode: str) -> None:
    """A study replayed with ``_replayed`` (shallow copies) asks the very points a study built
    through Optuna's own ``create_trial`` asks, running trials (TPE's constant liar) included."""
    dists = distributions(mode)
    views = history(mode, 30, seed=3)
    done, running = views[:-2], views[-2:]

    def study(own: bool) -> optuna.Study:
        out = optuna.create_study(
            direction="maximize",
            sampler=optuna.samplers.TPESampler(
                seed=11, n_startup_trials=8, multivariate=True, constant_liar=True
            ),
        )
        for view, state in [(v, optuna.trial.TrialState.COMPLETE) for v in done] + [
            (v, optuna.trial.TrialState.RUNNING) for v in running
        ]:
            params = {name: view.config.model_dump()[name] for name in dists}
            value = view.objective if state.is_finished() else None
            out.add_trial(
                optuna.trial.create_trial(
                    params=params, distributions=dists, value=value, state=state
                )
                if own
                else _replayed(params, dists, state, value)
            )
        return out

    ours, optunas = study(own=False), study(own=True)
    assert [ours.ask(dists).params for _ in range(3)] == [
        optunas.ask(dists).params for _ in range(3)
    ]
    # the storage numbered its own copies; the trials handed to it are untouched
    trial = _replayed({}, {}, optuna.trial.TrialState.COMPLETE, 1.0)
    ours.add_trial(trial)
    assert trial.number == -1 and ours.trials[-1].number == len(views) + 3
