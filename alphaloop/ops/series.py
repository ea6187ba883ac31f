"""Series the journal does not store but a chart needs: baseline returns and a trial's allocation.

The journal keeps a trial's daily returns and final weights, and only the *metrics* of the
baselines. Equity curves of the baselines and a trial's weights day by day are recomputed here
by the frozen evaluator's public functions (the very code its trials ran), on the session's data
(refused if its fingerprint changed). A replay is checked against the journal before it is
drawn: baselines must give the journaled metrics, and a trial's replayed allocation must give its
journaled daily returns. :class:`SessionSeries` hands the series to the charts
(:class:`alphaloop.charts.series.SeriesSource`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from alphaloop import trials as evaluator
from alphaloop.charts.series import BASELINE_NAMES, Allocation, Window, WindowReturns
from alphaloop.exceptions import AlphaloopError, InvalidRequest
from alphaloop.journal import SessionRecord, TrialRecord
from alphaloop.knobs import TrialConfig
from alphaloop.market import MarketData, market_of
from alphaloop.metrics import compute_metrics
from alphaloop.spec import ManualRunSpec, SessionSpec
from alphaloop.trials import TrialBudget
from alphaloop.vocabulary import Mode

# Replayed returns must match journaled ones to this (they are the same float operations).
RETURNS_TOLERANCE = 1e-9
METRICS_TOLERANCE = 1e-6


def stored_spec(session: SessionRecord) -> SessionSpec | ManualRunSpec:
    """What the session was started with.

    Raises:
        AlphaloopError: it holds no spec this alphaloop reads (the message says why).
    """
    if session.spec is None:
        why = session.settings.unread or "it holds no spec"
        raise AlphaloopError(f"session {session.id} does not say how its data was loaded ({why})")
    return session.spec


def session_market(session: SessionRecord) -> MarketData:
    """The session's market data, loaded as the session loaded it.

    Raises:
        AlphaloopError: the data cannot be loaded any more, or it changed since the session ran.
    """
    spec = stored_spec(session)
    try:
        data = market_of(spec)
    except Exception as err:  # a moved CSV, a changed column set: say which session it was
        raise AlphaloopError(f"cannot load the data of session {session.id}: {err}") from err
    if session.data_fingerprint and data.fingerprint != session.data_fingerprint:
        raise AlphaloopError(
            f"the data at {session.data_source!r} changed since session {session.id} ran "
            f"(fingerprint {data.fingerprint} != {session.data_fingerprint}); its series cannot "
            "be replayed"
        )
    return data


def session_budget(session: SessionRecord) -> TrialBudget:
    """The trial budget (evaluation cost, scenario window...) the session's trials ran with."""
    return stored_spec(session).trial_budget


def trial_window(trial: TrialRecord) -> Window:
    return "test" if trial.kind == "test" else "validation"


def _dates(data: MarketData, win: slice) -> tuple[str, list[str]]:
    days = [d.date().isoformat() for d in data.dates[win]]
    before = data.dates[win.start - 1].date().isoformat() if win.start > 0 else days[0]
    return before, days


def baseline_returns(
    data: MarketData, window: Window, budget: TrialBudget
) -> dict[str, np.ndarray]:
    """Daily net returns of the evaluator's two baselines on ``window`` (the series behind the
    metrics :func:`alphaloop.trials.baselines` reports)."""
    return {name: bt.net for name, bt in evaluator.baseline_backtests(data, window, budget).items()}


def _check_baselines(trial: TrialRecord, series: dict[str, np.ndarray]) -> None:
    for name, returns in series.items():
        journaled = (trial.baselines or {}).get(name)
        if not journaled:
            continue
        replayed = compute_metrics(returns, np.zeros_like(returns))
        gap = abs(replayed.total_return - journaled["total_return"])
        if gap > METRICS_TOLERANCE:
            raise AlphaloopError(
                f"the {BASELINE_NAMES[name]} baseline replayed for trial #{trial.idx} returns "
                f"{replayed.total_return:.6f}, not the journaled {journaled['total_return']:.6f}"
            )


def on_window(trial: TrialRecord, days: int) -> list[float]:
    """The trial's journaled returns on its window of ``days`` days: all of them, or for a
    search trial scored on several folds the last ``days`` (its folds tile the history up to
    the end of VALIDATION, the last one VALIDATION itself).

    Raises:
        AlphaloopError: fewer returns than the window has days.
    """
    returns = list(trial.val_returns or [])
    if len(returns) < days or (len(returns) > days and trial_window(trial) != "validation"):
        raise AlphaloopError(
            f"trial #{trial.idx} journaled {len(returns)} daily returns but its "
            f"{trial_window(trial)} window has {days} days"
        )
    return returns[len(returns) - days :]


def window_returns(trial: TrialRecord, data: MarketData, budget: TrialBudget) -> WindowReturns:
    """The trial's journaled daily returns on its window, with the baselines replayed there.

    Raises:
        InvalidRequest: the trial has no journaled returns (it crashed, or is still running).
        AlphaloopError: the replayed baselines do not give the journaled baseline metrics.
    """
    if not trial.val_returns:
        raise InvalidRequest(
            f"trial #{trial.idx} of session {trial.session_id} has no daily returns to draw "
            f"(status {trial.status})"
        )
    window = trial_window(trial)
    win = evaluator.window_slice(data, window)
    journaled = on_window(trial, win.stop - win.start)
    series = baseline_returns(data, window, budget)
    _check_baselines(trial, series)
    start, days = _dates(data, win)
    return WindowReturns(
        window=window,
        start_date=start,
        dates=days,
        strategy=journaled,
        baselines={k: v.tolist() for k, v in series.items()},
    )


def allocation(trial: TrialRecord, mode: Mode, data: MarketData, budget: TrialBudget) -> Allocation:
    """Replays the trial's weights on its window, checked against its journaled returns.

    Raises:
        InvalidRequest: the trial has no journaled returns (it crashed, or is still running).
        AlphaloopError: the policy file is gone, or the replay does not reproduce the journal.
    """
    if not trial.val_returns:
        raise InvalidRequest(
            f"trial #{trial.idx} of session {trial.session_id} has no allocation to draw "
            f"(status {trial.status})"
        )
    if mode != "cufolio_only" and (not trial.policy_path or not Path(trial.policy_path).is_file()):
        raise AlphaloopError(
            f"trial #{trial.idx}'s policy is not at {trial.policy_path!r} any more; its weights "
            "cannot be replayed"
        )
    window = trial_window(trial)
    targets, rebalance, _ = evaluator.strategy_targets(
        mode,
        TrialConfig(**trial.config),
        data,
        window,
        budget,
        trial.seed or 0,
        policy_path=None if mode == "cufolio_only" else trial.policy_path,
    )
    win = evaluator.window_slice(data, window)
    book = evaluator.simulate(data.returns[win], targets, rebalance, budget.eval_cost_bps)
    journaled = np.asarray(on_window(trial, win.stop - win.start))
    if (
        book.net.shape != journaled.shape
        or np.max(np.abs(book.net - journaled)) > RETURNS_TOLERANCE
    ):
        raise AlphaloopError(
            f"the replayed allocation of trial #{trial.idx} does not reproduce its journaled "
            "returns (the policy file or the evaluator changed since it ran)"
        )
    _, days = _dates(data, win)
    return Allocation(
        window=window,
        dates=days,
        symbols=list(data.symbols),
        weights=book.holdings.tolist(),
        final_weights=book.final.tolist(),
        turnover=book.turnover.tolist(),
    )


class SessionSeries:
    """The replayed series of one session's trials, its data loaded once on first use."""

    def __init__(self) -> None:
        self._loaded: dict[str, tuple[MarketData, TrialBudget]] = {}

    def _inputs(self, session: SessionRecord) -> tuple[MarketData, TrialBudget]:
        if session.id not in self._loaded:
            self._loaded[session.id] = (session_market(session), session_budget(session))
        return self._loaded[session.id]

    def window_returns(self, session: SessionRecord, trial: TrialRecord) -> WindowReturns:
        return window_returns(trial, *self._inputs(session))

    def allocation(self, session: SessionRecord, trial: TrialRecord) -> Allocation:
        return allocation(trial, session.mode, *self._inputs(session))
