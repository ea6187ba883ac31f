"""Embedded proposers: Optuna TPE (the default without an LLM) and uniform random search.

Both are stateless between calls: each TPE proposal rebuilds an in-memory Optuna study from the
journaled history, so a resumed session proposes exactly as if it had never stopped. The replay
is linear in the history and cheap (see :class:`_Replayed`): a long session's proposals do not
slow it down more than the sampler itself does. Random search draws without reading the
history, so it skips the replay.

With parallel workers the trials still running are added to the study as running trials and
TPE samples with ``constant_liar`` (each running point counts as a bad result), so a batch of
asks does not pile onto one point. The sampler's seed counts running trials as history, so the
``k``-th proposal draws from the same seed whatever the number of workers: random search and
TPE's warm-up draw the same points as a one-worker session.
"""

from __future__ import annotations

import copy
import datetime
import math
import warnings
from typing import Any

import optuna
from optuna.distributions import BaseDistribution

from alphaloop.knobs import ConfigDelta, knobs_for_mode, optuna_distributions
from alphaloop.meta_agent.proposers.base import (
    ProposalContext,
    ProposerBase,
    TrialView,
    changed_knobs,
)

optuna.logging.set_verbosity(optuna.logging.WARNING)
# TPE's multivariate mode is flagged experimental; the warning would repeat every trial.
warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)


def distributions(mode: str) -> dict[str, BaseDistribution]:
    """Optuna distributions over the knobs a mode uses, on each knob's real scale."""
    return optuna_distributions(knobs_for_mode(mode))


class _Replayed(optuna.trial.FrozenTrial):
    """A journaled trial replayed into a study (as ``optuna.trial.create_trial`` makes it).

    Optuna's in-memory storage deep-copies every trial added to it: about 80 copies of dicts and
    distributions a trial, which at a few hundred trials cost more than the sampler's own work
    and grew every proposal's time with the session's length. A replayed trial is never changed
    after it is made (its params, distributions and value are the journal's; the storage only
    numbers its copy), so a shallow copy is as good.
    """

    def __deepcopy__(self, memo: dict[int, Any]) -> _Replayed:
        return copy.copy(self)


def _replayed(
    params: dict[str, Any],
    dists: dict[str, BaseDistribution],
    state: optuna.trial.TrialState,
    value: float | None = None,
) -> _Replayed:
    now = datetime.datetime.now()
    trial = _Replayed(
        number=-1,
        trial_id=-1,
        state=state,
        value=value,
        values=None,
        datetime_start=now,
        datetime_complete=now if state.is_finished() else None,
        params=params,
        distributions=dists,
        user_attrs={},
        system_attrs={},
        intermediate_values={},
    )
    trial._validate()
    return trial


class _StudyProposer(ProposerBase):
    name = "study"
    # Whether the sampler reads the study's trials. Uniform random draws never do, so a random
    # proposal skips the replay: the same draws, at no cost that grows with the session.
    reads_history = True

    def _sampler(self, seed: int, parallel: bool = False) -> optuna.samplers.BaseSampler:
        raise NotImplementedError

    def propose(self, ctx: ProposalContext) -> ConfigDelta:
        dists = distributions(ctx.mode)
        # Seeded by the history length too, so a resumed session draws what it would have drawn;
        # folded into 0 .. 2**32 - 1, the range optuna's samplers (numpy RandomState) accept.
        # A refused duplicate shifts the seed, so asking again draws another point.
        drawn = len(ctx.history) + len(ctx.pending) + 7_919 * len(ctx.rejected)
        seed = (ctx.seed * 100_003 + drawn) % 2**32
        sampler = self._sampler(seed, parallel=bool(ctx.pending))
        study = optuna.create_study(direction="maximize", sampler=sampler)
        if self.reads_history:
            _replay(study, ctx, dists)
        # Counted before ``ask`` adds the new trial, and only finished ones: TPE leaves its
        # random warm-up once n_startup_trials trials have completed (failed ones do not count).
        n_seen = len(study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,)))
        trial = study.ask(dists)
        changes = changed_knobs(ctx, dict(trial.params))
        return ConfigDelta(changes=changes, rationale=self._rationale(n_seen))

    def _rationale(self, n_seen: int) -> str:
        raise NotImplementedError


def _replay(study: optuna.Study, ctx: ProposalContext, dists: dict[str, BaseDistribution]) -> None:
    """The session's finished baseline and search trials into ``study``, then those still
    running (as running trials)."""

    def params(view: TrialView) -> dict[str, Any]:
        config = view.config.model_dump()
        return {name: config[name] for name in dists}

    for view in ctx.history:
        if view.kind not in ("baseline", "search") or view.status == "running":
            continue
        if view.objective is None or not math.isfinite(view.objective):
            state, value = optuna.trial.TrialState.FAIL, None
        else:
            state, value = optuna.trial.TrialState.COMPLETE, view.objective
            if view.violation:
                # A limit breach must not look like a good region: rank it below everything.
                value = -1e6
        study.add_trial(_replayed(params(view), dists, state, value))
    for view in ctx.pending:
        study.add_trial(_replayed(params(view), dists, optuna.trial.TrialState.RUNNING))


class TPEProposer(_StudyProposer):
    """Tree-structured Parzen estimator over the mode's knobs (multivariate, log scales kept)."""

    name = "tpe"

    def __init__(self, n_startup_trials: int = 8) -> None:
        self.n_startup_trials = n_startup_trials

    def _sampler(self, seed: int, parallel: bool = False) -> optuna.samplers.BaseSampler:
        return optuna.samplers.TPESampler(
            seed=seed,
            n_startup_trials=self.n_startup_trials,
            multivariate=True,
            constant_liar=parallel,
        )

    def _rationale(self, n_seen: int) -> str:
        if n_seen < self.n_startup_trials:
            return f"TPE warm-up: random draw {n_seen + 1} of {self.n_startup_trials}"
        return f"TPE: most promising point under the density model of {n_seen} past trials"


class RandomProposer(_StudyProposer):
    """Uniform random search on each knob's scale: the baseline any proposer must beat."""

    name = "random"
    reads_history = False

    def _sampler(self, seed: int, parallel: bool = False) -> optuna.samplers.BaseSampler:
        return optuna.samplers.RandomSampler(seed=seed)

    def _rationale(self, n_seen: int) -> str:
        return "random search: uniform draw on each knob's scale"
