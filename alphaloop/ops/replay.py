"""``alphaloop replay``: a journaled trial or a library policy re-run on a window of one's own.

A replay is the frozen evaluator's :func:`~alphaloop.trials.evaluate` of the parent as a
published policy (:class:`~alphaloop.trials.PolicySubject`) on the requested rows: the rows
before them stay in place as history (the policy's lookback, the scenario window), nothing
after them is read, and the evaluator's own code decides and scores. Nothing trains: a PPO
trial replays its saved zip (or cannot be replayed), a library policy loads its verified file,
a Mean-CVaR config re-solves with its pinned seed. The same inputs give bit-identical metrics,
journaled with the evaluator version that produced them.

Decisions:

* A window must lie inside the data, hold at least ``MIN_EVAL_ROWS`` trading days, and have the
  history the strategy looks back on before it (``lookback`` days for PPO, ``scenario_window``
  for a Mean-CVaR stage); otherwise it is refused (exit 2), never silently cut.
* A window overlapping the training window of a PPO policy is replayed, with a warning that is
  printed and journaled with the replay: those days are in sample for the policy, and a person
  comparing windows must see it, but refusing would stop legitimate looks at in-sample fit.
* Replays of a trial keep its config hash and point to it (``parent_trial_id``); replays of a
  policy point to the library entry (``parent_policy_id``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import BaseModel, ConfigDict

from alphaloop import library
from alphaloop.exceptions import AlphaloopError, InvalidRequest, TrialCrashed
from alphaloop.journal import PolicyKind, ReplayRecord, SessionRecord
from alphaloop.knobs import TrialConfig, config_hash
from alphaloop.market import MIN_EVAL_ROWS, MarketData, market_of
from alphaloop.metrics import Metrics
from alphaloop.ops._journal import open_journal
from alphaloop.ops.series import session_market, stored_spec
from alphaloop.settings import Settings
from alphaloop.spec import DataSpec
from alphaloop.trials import PolicySubject, Rows, TrialBudget, TrialResult, evaluate
from alphaloop.vocabulary import Mode

PPO_MODES = ("ppo_only", "unified")
CVAR_MODES = ("cufolio_only", "unified")


class ReplayRequest(BaseModel):
    """What to replay and where: a trial (``session:idx``) or a library policy, on
    ``start..end`` (ISO dates, inclusive), optionally on other data with the same symbols."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    trial: str | None = None
    policy_id: int | None = None
    start: str
    end: str
    data: str | None = None


class ReplayRun(BaseModel):
    """A finished replay: the journaled row and what it was compared with."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    replay: ReplayRecord
    # What was replayed, as a person names it: "trial #8 of s-..." (the journal's #) or "policy 3".
    parent: str
    mode: str
    metric: str
    objective: float
    metrics: Metrics
    baselines: dict[str, Metrics]
    n_days: int
    warning: str | None = None


class _Parent(BaseModel):
    """What a replay re-runs, whichever way it was named."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    parent_trial_id: int | None = None
    parent_policy_id: int | None = None
    label: str
    mode: Mode
    config: TrialConfig
    hash: str
    seed: int
    budget: TrialBudget
    metric: str
    policy_path: str | None
    data_spec: DataSpec
    symbols: list[str]
    session: SessionRecord


def parse_trial_ref(text: str) -> tuple[str, int]:
    """``SESSION:IDX`` as (session id, index).

    Raises:
        ValueError: not of that form.
    """
    session_id, sep, idx = text.rpartition(":")
    if not sep or not session_id or not idx.strip().lstrip("-").isdigit():
        raise ValueError(f"--trial takes SESSION:IDX (e.g. s-20260101-120000-ab12:3), got {text!r}")
    return session_id, int(idx)


def _trial_parent(journal: Any, ref: str) -> _Parent:
    session_id, idx = parse_trial_ref(ref)
    trial = journal.trials.at(session_id, idx)
    session = journal.sessions.get(session_id)
    spec = stored_spec(session)
    config = TrialConfig(**trial.config)
    path = None
    if session.mode in PPO_MODES:
        if not trial.policy_path or not Path(trial.policy_path).is_file():
            raise AlphaloopError(
                f"trial #{idx} of session {session_id} ({session.mode}) has no saved policy "
                f"at {trial.policy_path!r}: it cannot be replayed without retraining (run "
                "`alphaloop trial` with its config to train it again)"
            )
        path = trial.policy_path
    return _Parent(
        parent_trial_id=trial.id,
        label=f"trial #{idx} of {session_id}",
        mode=session.mode,
        config=config,
        hash=trial.config_hash or config_hash(config),
        seed=trial.seed if trial.seed is not None else session.seed,
        budget=spec.trial_budget,
        metric=session.objective.metric,
        policy_path=path,
        data_spec=spec.data_spec,
        symbols=session.settings.data.symbols if session.settings.data else [],
        session=session,
    )


def _policy_parent(journal: Any, policy_id: int) -> _Parent:
    record = journal.policies.get(policy_id)
    path = None
    if record.kind != PolicyKind.mean_cvar:
        path = str(library.verified_policy_file(record))
    return _Parent(
        parent_policy_id=record.id,
        label=f"policy {record.id}",
        mode=record.mode,
        config=TrialConfig(**record.config),
        hash=record.config_hash,
        seed=record.seed,
        budget=record.trial_budget,
        metric=record.objective.metric,
        policy_path=path,
        data_spec=record.data_spec,
        symbols=record.symbols,
        session=journal.sessions.get(record.session_id),
    )


def _market(parent: _Parent, data: str | None) -> MarketData:
    """The parent's data as it was loaded, or ``data`` loaded the same way (same symbols)."""
    if data is None:
        if parent.parent_trial_id is not None:
            return session_market(parent.session)
        return market_of(parent.data_spec)
    symbols = parent.symbols or parent.data_spec.symbols
    return market_of(parent.data_spec.model_copy(update={"data": data, "symbols": symbols}))


def _day(text: str, flag: str) -> pd.Timestamp:
    try:
        return pd.Timestamp(text)
    except ValueError:
        raise InvalidRequest(f"{flag} {text!r} is not a date; write it as YYYY-MM-DD") from None


def window_rows(data: MarketData, start: str, end: str, history: int) -> slice:
    """The rows of ``data`` dated ``start..end`` (inclusive), checked.

    Raises:
        InvalidRequest: dates outside the data, a reversed or short window, or fewer than
            ``history`` rows before it.
    """
    d1, d2 = _day(start, "--start"), _day(end, "--end")
    first, last = data.dates[0], data.dates[-1]
    span = f"the data {data.source!r} runs {first.date()}..{last.date()}"
    if d1 > d2:
        raise InvalidRequest(f"--start {start} is after --end {end}")
    earliest = data.dates[min(history, len(data.dates) - 1)].date()
    if d2 > last:
        raise InvalidRequest(f"the window {start}..{end} is outside the data: {span}")
    if d1 < first:
        raise InvalidRequest(
            f"--start {start} is before the data's first day ({span}); the strategy looks back "
            f"{history} days, so start on {earliest} or later"
        )
    lo = int(data.dates.searchsorted(d1, side="left"))
    hi = int(data.dates.searchsorted(d2, side="right"))
    if hi - lo < MIN_EVAL_ROWS:
        raise InvalidRequest(
            f"the window {start}..{end} holds {hi - lo} trading days; a replay needs at least "
            f"{MIN_EVAL_ROWS}"
        )
    if lo < history:
        raise InvalidRequest(
            f"the window {start}..{end} starts with {lo} trading days of history before it; the "
            f"strategy looks back {history} days, so start on {earliest} or later ({span})"
        )
    return slice(lo, hi)


def _history(parent: _Parent) -> int:
    needed = 1
    if parent.mode in PPO_MODES:
        needed = max(needed, parent.config.lookback)
    if parent.mode in CVAR_MODES:
        needed = max(needed, parent.budget.scenario_window)
    return needed


def _overlap_warning(parent: _Parent, data: MarketData, win: slice) -> str | None:
    """A sentence when a PPO policy is replayed on days it was trained on, else None."""
    if parent.mode not in PPO_MODES:
        return None
    described = parent.session.settings.data
    if described is None:
        return None
    trained = described.train
    t0, t1 = pd.Timestamp(trained[0]), pd.Timestamp(trained[1])
    w0, w1 = data.dates[win.start], data.dates[win.stop - 1]
    if w1 < t0 or w0 > t1:
        return None
    lo, hi = max(w0, t0).date(), min(w1, t1).date()
    return (
        f"the window overlaps the training window of {parent.label} ({t0.date()}..{t1.date()}) "
        f"on {lo}..{hi}: those days are in sample for the policy, its metrics there are not "
        "out-of-sample evidence"
    )


def _evaluate(parent: _Parent, data: MarketData, win: slice) -> TrialResult:
    """The frozen evaluator's score of ``parent`` as a published policy on rows ``win``."""
    subject = PolicySubject(
        mode=parent.mode,
        config=parent.config,
        budget=parent.budget,
        seed=parent.seed,
        metric=parent.metric,
        policy_path=parent.policy_path,
    )
    try:
        return evaluate(subject, Rows.of(win), data)
    except TrialCrashed as err:
        raise AlphaloopError(f"the replay of {parent.label} failed: {err}") from None


def replay(settings: Settings, request: ReplayRequest) -> ReplayRun:
    """Re-runs a trial or a policy on ``request``'s window and journals the replay.

    Raises:
        NoJournal: no journal in the home yet.
        ValueError: not exactly one of ``trial`` / ``policy_id``, or a malformed trial reference.
        NotFound, NotFound, NotFound: the parent does not exist.
        InvalidRequest: the window is outside the data, reversed, too short, or lacks history.
        AlphaloopError: a PPO trial without its saved policy, its data cannot be loaded, or the
            evaluator could not score it (a diverged policy, a failed solve).
        PolicyTampered: the policy's file changed since it was published (nothing was loaded).
        InvalidRequest: ``request.data`` cannot be loaded with the parent's symbols.
    """
    if (request.trial is None) == (request.policy_id is None):
        raise ValueError("replay takes exactly one of --trial SESSION:IDX or --policy ID")
    with open_journal(settings) as journal:
        if request.trial is not None:
            parent = _trial_parent(journal, request.trial)
        else:
            parent = _policy_parent(journal, int(request.policy_id or 0))
        data = _market(parent, request.data)
        win = window_rows(data, request.start, request.end, _history(parent))
        warning = _overlap_warning(parent, data, win)
        result = _evaluate(parent, data, win)
        record = journal.policies.add_replay(
            parent_trial_id=parent.parent_trial_id,
            parent_policy_id=parent.parent_policy_id,
            config_hash=parent.hash,
            start=result.start_date,
            end=result.end_date,
            data_source=data.source,
            data_fingerprint=data.fingerprint,
            metrics=result.metrics.model_dump(),
            returns=result.daily_returns,
            warning=warning,
            evaluator_version=result.evaluator_version,
        )
    return ReplayRun(
        replay=record,
        parent=parent.label,
        mode=parent.mode,
        metric=parent.metric,
        objective=result.objective,
        metrics=result.metrics,
        baselines=result.baselines,
        n_days=win.stop - win.start,
        warning=warning,
    )
