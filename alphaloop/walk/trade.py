"""What an epoch trades over the period after it, read from its finished session.

The session's finalize has already evaluated its pick and the default config once on its TEST
window, which is the epoch's period: those rows are the strict rule's trade and the default's.
1/N is the evaluator's equal-weight backtest of the same days. The other rules choose among the
epoch's search trials scored on every fold (a trial raced out after fewer folds has a partial
score, never ranked with full ones); each of those is traded over the period by the frozen
evaluator, as finalize trades the pick (a PPO trial with the policy it trained, nothing
retrained), and its returns are journaled: they are what the preference pairs are labelled by.
"""

from __future__ import annotations

import logging
import math

from alphaloop.exceptions import AlphaloopError
from alphaloop.flywheel.walk_pairs import Pair, agreement, epoch_pairs
from alphaloop.journal import (
    EpochResult,
    Journal,
    PairTally,
    SessionRecord,
    Traded,
    TrialKind,
    TrialRecord,
    TrialStatus,
    best_estimate,
    best_kept,
)
from alphaloop.knobs import TrialConfig, config_hash
from alphaloop.market import MarketData, market_of
from alphaloop.spec import SessionSpec
from alphaloop.trials import equal_weight_backtest, run_trial
from alphaloop.walk.plan import Epoch

logger = logging.getLogger(__name__)

_DEFAULT_HASH = config_hash(TrialConfig())


def candidates(journal: Journal, session: SessionRecord) -> list[TrialRecord]:
    """The session's search trials scored on every fold and within its limits, best fold score
    first (ties to the earlier trial)."""
    n_folds = session.final.folds.n if session.final and session.final.folds else 1
    by_fold = journal.folds.returns_by_fold(session.id)
    rows = journal.trials.of_session(session.id, TrialKind.search, series=False)
    full = [
        t
        for t in rows
        if t.status in (TrialStatus.keep, TrialStatus.discard)
        and t.score is not None
        and math.isfinite(t.score)
        and t.violation is None
        and len(by_fold.get(t.id, {})) >= n_folds
    ]
    return sorted(full, key=lambda t: (-t.score, t.idx))


def _test_rows(journal: Journal, session_id: str) -> dict[int, TrialRecord]:
    """The session's TEST rows with an outcome, by the trial they evaluated."""
    rows = journal.trials.of_session(session_id, TrialKind.test)
    return {
        t.parent_id: t
        for t in rows
        if t.parent_id is not None and t.val_returns and t.status == TrialStatus.keep
    }


def _traded(trial: TrialRecord | None, returns: list[float]) -> Traded:
    if trial is None:
        return Traded(trial_id=None, config_hash=_DEFAULT_HASH, returns=tuple(returns))
    return Traded(trial_id=trial.id, config_hash=trial.config_hash or "", returns=tuple(returns))


def period_returns(
    spec: SessionSpec, data: MarketData, trials: list[TrialRecord]
) -> dict[int, list[float]]:
    """Each trial traded over ``data``'s TEST window by the frozen evaluator (a PPO trial with
    its saved policy), by trial id; a trial that cannot be traded is left out (logged)."""
    out: dict[int, list[float]] = {}
    done: dict[tuple[str | None, int | None, str | None], list[float]] = {}
    for t in trials:
        key = (t.config_hash, t.seed, t.policy_path)
        if key not in done:
            try:
                result = run_trial(
                    spec.mode,
                    TrialConfig(**t.config),
                    data,
                    spec.trial_budget,
                    t.seed or 0,
                    window="test",
                    metric=spec.objective.metric,
                    policy_path=t.policy_path if spec.mode != "cufolio_only" else None,
                )
            except (AlphaloopError, OSError, ValueError) as err:
                logger.warning("trial %d could not be traded over the period: %s", t.id, err)
                continue
            done[key] = result.daily_returns
        out[t.id] = done[key]
    return out


def epoch_result(
    journal: Journal,
    session: SessionRecord,
    spec: SessionSpec,
    epoch: Epoch,
    walk_id: str,
    data: MarketData,
) -> EpochResult:
    """What the epoch's rules traded over its period (journaling the candidates' returns);
    ``spec`` and ``data`` are the epoch session's.

    Raises:
        AlphaloopError: the session has no TEST row of the default (it did not finish).
    """
    final = session.final
    tests = _test_rows(journal, session.id)
    baselines = journal.trials.of_session(session.id, TrialKind.baseline, series=False)
    scored = [t for t in baselines if t.status == TrialStatus.keep and t.objective is not None]
    if final is None or final.baseline_trial_id not in tests or not scored:
        raise AlphaloopError(
            f"session {session.id} of epoch {epoch.index} has no TEST evaluation of the "
            "default config; resume the walk to finish it"
        )
    default = list(tests[final.baseline_trial_id].val_returns or [])
    ranked = candidates(journal, session)
    known = journal.walks.returns(walk_id)
    missing = [t for t in ranked if (t.id, epoch.index) not in known]
    fresh = period_returns(spec, data, missing)
    if fresh:
        journal.walks.add_returns(walk_id, epoch.index, fresh)
    traded = {t.id: known.get((t.id, epoch.index)) or fresh.get(t.id) for t in ranked}

    def trade(trial: TrialRecord | None) -> Traded:
        if trial is None:
            return _traded(None, default)
        if trial.id in tests:  # the session's own TEST row of it
            return _traded(trial, list(tests[trial.id].val_returns or []))
        returns = traded.get(trial.id)
        return _traded(trial, returns) if returns else _traded(None, default)

    strict = None
    if final.pick == "search" and final.best_trial_id is not None:
        strict = next((t for t in ranked if t.id == final.best_trial_id), None)
        strict = strict or journal.trials.get(final.best_trial_id)
    best = best_estimate(ranked, scored)
    kept = best_kept(ranked)
    window = data.test
    return EpochResult(
        epoch=epoch.index,
        session_id=session.id,
        start=epoch.first_day,
        end=epoch.last_day,
        dates=tuple(d.date().isoformat() for d in data.dates[window]),
        default=tuple(default),
        equal_weight=tuple(
            float(x) for x in equal_weight_backtest(data, "test", spec.trial_budget).net
        ),
        picks={"strict": trade(strict), "kept": trade(kept), "best": trade(best)},
        candidates=tuple((t.id, float(t.score)) for t in ranked),
    )


def pairs_checked(
    journal: Journal, walk_id: str, spec: SessionSpec, epochs: list[Epoch]
) -> PairTally:
    """The walk's preference pairs, each epoch's labelled by its period, and how often the
    period after that agrees: the two configs of each pair are traded over it (journaled with
    the candidates' returns) and compared (see :mod:`alphaloop.flywheel.walk_pairs`)."""
    linked = {e.epoch: e for e in journal.walks.epochs(walk_id)}
    returns = journal.walks.returns(walk_id)
    labelled: list[tuple[int, Pair]] = []
    for epoch in epochs:
        if epoch.index not in linked:
            continue
        pairs = epoch_pairs(journal, linked[epoch.index], returns)
        labelled += [(epoch.index, p) for p in pairs]
        later = epoch.index + 1
        if later >= len(epochs) or not pairs:
            continue
        trials = {t.id: t for c, r, _ in pairs for t in (c, r) if (t.id, later) not in returns}
        if trials:
            data = market_of(
                spec.model_copy(
                    update={
                        "train_end": epochs[later].train_end,
                        "val_end": epochs[later].val_end,
                        "test_end": epochs[later].test_end,
                    }
                )
            )
            fresh = period_returns(spec, data, list(trials.values()))
            journal.walks.add_returns(walk_id, later, fresh)
            returns.update({(t, later): r for t, r in fresh.items()})
    return agreement(labelled, returns)
