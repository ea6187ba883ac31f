"""Reading research sessions, the one module of session reads every front end calls: the list,
where one is (with its live trials), what a poller has not seen yet, its full review, its
digest, its leaderboard, one trial and two compared, and the charts of its metrics."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from alphaloop.exceptions import AlphaloopError, InvalidRequest, NotFound
from alphaloop.journal import (
    ChartReadRecord,
    ClipRecord,
    EventRecord,
    FoldRecord,
    Journal,
    LLMUsageRecord,
    SessionRecord,
    TrialRecord,
    pid_alive,
)
from alphaloop.ops._journal import open_journal
from alphaloop.ops.rows import Best, TrialRow, best_of, pick_of, row_of
from alphaloop.settings import Settings

_FROZEN = ConfigDict(frozen=True, extra="forbid")


def resume_command(session: SessionRecord, counted: int) -> str | None:
    """The command that continues a research session interrupted (a crash, a kill -9) or
    stopped with budget left (``counted`` trials run), or None when there is nothing to resume
    (or, for a manual training run, no way to)."""
    if session.manual:
        return None
    if session.status != "interrupted" and not session.continues_after_stop(counted):
        return None
    return f"alphaloop research resume {session.id}"


def get_session(settings: Settings, session_id: str) -> SessionRecord:
    """One session as it reads now.

    Raises:
        NoJournal, NotFound: no such session.
    """
    with open_journal(settings) as j:
        return j.sessions.get(session_id)


class SessionSummary(BaseModel):
    """One session of the list, with what a reader needs next to it."""

    model_config = _FROZEN

    session: SessionRecord
    counted_trials: int
    resume: str | None
    # Its best as every view says it, only when asked for (its tally: a read of its newest
    # trials once kept).
    best: Best | None = None


def list_sessions(
    settings: Settings,
    *,
    limit: int | None = None,
    with_best: bool = False,
    missing_ok: bool = True,
) -> list[SessionSummary]:
    """Sessions, newest first.

    Args:
        settings: where the journal is.
        limit: at most this many (default: all).
        with_best: also read each session's best trial.
        missing_ok: no journal yet reads as no sessions (a first session may still be loading
            its data); with False it raises :class:`NoJournal`.
    """
    if missing_ok and not settings.journal_path.exists():
        return []
    with open_journal(settings) as j:
        rows = j.sessions.list()[:limit]
        return [
            SessionSummary(
                session=s,
                counted_trials=(counted := j.trials.counted(s.id)),
                resume=resume_command(s, counted),
                best=best_of(j, s) if with_best else None,
            )
            for s in rows
        ]


class LiveTrial(BaseModel):
    """A trial still running, and where its training curve is."""

    model_config = _FROZEN

    id: int
    idx: int
    kind: str
    started_at: Any
    curve_points: int
    latest: Any
    # A run killed hard leaves its row running; say so rather than show it as live.
    process_alive: bool
    trial: TrialRecord = Field(exclude=True)

    @classmethod
    def of(cls, trial: TrialRecord) -> LiveTrial:
        curve = trial.curve or []
        return cls(
            id=trial.id,
            idx=trial.idx,
            kind=trial.kind,
            started_at=trial.started_at,
            curve_points=len(curve),
            latest=curve[-1] if curve else None,
            process_alive=pid_alive(trial.owner_pid),
            trial=trial,
        )


class SessionProgress(BaseModel):
    """Where a session is: its row, its trials, the best so far, the trials running now."""

    model_config = _FROZEN

    session: SessionRecord
    trials: list[TrialRecord]
    counted_trials: int
    best: TrialRecord | None
    running: list[LiveTrial]
    resume: str | None
    # How the LLM proposer asks now (tools, json_schema, json_text); None without LLM calls.
    llm_mode: str | None = None


def session_status(settings: Settings, session_id: str | None = None) -> SessionProgress | None:
    """The status of ``session_id``, or of the newest session.

    Returns None when no session id is given and there is no session yet (no journal, or an
    empty one): that is an answer, not an error.

    Raises:
        NoJournal: a session id is given and there is no journal.
        NotFound: no such session.
    """
    if session_id is None and not settings.journal_path.exists():
        return None
    with open_journal(settings) as j:
        if session_id is None:
            rows = j.sessions.list()
            if not rows:
                return None
            session_id = rows[0].id
        s, trials = j.sessions.get(session_id), j.trials.of_session(session_id)
        top = [b] if (b := pick_of(j, s)) else []
        counted = j.trials.counted(session_id)
        modes = [c.mode for c in j.logs.llm_calls(session_id) if c.purpose == "propose" and c.mode]
    return SessionProgress(
        llm_mode=modes[-1] if modes else None,
        session=s,
        trials=trials,
        counted_trials=counted,
        best=top[0] if top else None,
        running=[LiveTrial.of(t) for t in trials if t.status == "running"],
        resume=resume_command(s, counted),
    )


class SessionReview(BaseModel):
    """Everything journaled about a session: leaderboard, every trial with its clips, the
    test-window result (in ``session.final``) and the readings of its charts."""

    model_config = _FROZEN

    session: SessionRecord
    counted_trials: int
    leaderboard: list[TrialRecord]
    trials: list[TrialRecord]
    clips: dict[int, list[ClipRecord]]  # trial id -> its clips
    chart_reads: list[ChartReadRecord]


def _review(j: Journal, session_id: str, top: int) -> SessionReview:
    s = j.sessions.get(session_id)
    clips: dict[int, list[ClipRecord]] = {}
    for c in j.logs.session_clips(session_id):
        clips.setdefault(c.trial_id, []).append(c)
    return SessionReview(
        session=s,
        counted_trials=j.trials.counted(session_id),
        leaderboard=j.trials.leaderboard(session_id, top),
        trials=j.trials.of_session(session_id),
        clips=clips,
        chart_reads=j.logs.chart_reads(session_id),
    )


def session_review(settings: Settings, session_id: str, *, top: int = 10) -> SessionReview:
    """The review of a session (its ``top`` best trials first).

    Raises:
        NoJournal: there is no journal.
        NotFound: no such session.
    """
    with open_journal(settings) as j:
        return _review(j, session_id, top)


class SessionSnapshot(BaseModel):
    """What a poller of a session needs: its row, the best so far, the trials running now, and
    the trials (without their per-day series) and clips it has not seen yet."""

    model_config = _FROZEN

    session: SessionRecord
    counted_trials: int
    best: TrialRecord | None
    running: list[LiveTrial]
    resume: str | None
    trials: list[TrialRecord]  # journal id above the poller's cursor
    clips: dict[int, list[ClipRecord]]  # trial id -> its clips, for those trials


def _clips_by_trial(rows: list[ClipRecord]) -> dict[int, list[ClipRecord]]:
    clips: dict[int, list[ClipRecord]] = {}
    for c in rows:
        clips.setdefault(c.trial_id, []).append(c)
    return clips


_SERIES = ("val_returns", "final_weights", "curve", "prompt")  # a poll sends no per-day series


def session_snapshot(settings: Settings, session_id: str, *, after: int = 0) -> SessionSnapshot:
    """A session as a poller sees it, reading only what changed since its cursor ``after`` (a
    journal trial id): the cost of a poll follows the trials it returns, not the session's size.

    Raises:
        NoJournal: there is no journal.
        NotFound: no such session.
    """
    with open_journal(settings) as j:
        s = j.sessions.get(session_id)
        best = pick_of(j, s)
        return SessionSnapshot(
            session=s,
            counted_trials=(counted := j.trials.counted(session_id)),
            best=best.model_copy(update=dict.fromkeys(_SERIES)) if best else None,
            running=[LiveTrial.of(t) for t in j.trials.running(session_id)],
            resume=resume_command(s, counted),
            trials=j.trials.after(session_id, after),
            clips=_clips_by_trial(j.logs.clips_after(session_id, after)),
        )


def session_review_after(
    settings: Settings, session_id: str, *, after: int = 0, series: bool = False, top: int = 10
) -> SessionReview:
    """:func:`session_review` of the trials with a journal id above ``after`` only, with their
    per-day series (``val_returns``, ``final_weights``, ``curve``), in them and in the
    leaderboard, only when ``series`` is set. The leaderboard and chart reads are whole.

    Raises:
        NoJournal: there is no journal.
        NotFound: no such session.
    """
    with open_journal(settings) as j:
        s = j.sessions.get(session_id)
        return SessionReview(
            session=s,
            counted_trials=j.trials.counted(session_id),
            leaderboard=(
                j.trials.leaderboard(session_id, top)
                if series
                else j.trials.leaderboard(session_id, top, series=False)
            ),
            trials=j.trials.after(session_id, after, series=series),
            clips=_clips_by_trial(j.logs.clips_after(session_id, after)),
            chart_reads=j.logs.chart_reads(session_id),
        )


class SessionDigest(BaseModel):
    """What a summary of one session is made of."""

    model_config = _FROZEN

    session: SessionRecord
    trials: list[TrialRecord]
    best: TrialRecord | None
    counted_trials: int
    llm_calls: list[LLMUsageRecord]
    events: list[EventRecord]


def session_digest(settings: Settings, session_id: str) -> SessionDigest:
    """A session with its trials, best trial, LLM calls and events.

    Raises:
        NoJournal, NotFound: no such session.
    """
    with open_journal(settings) as j:
        s = j.sessions.get(session_id)
        return SessionDigest(
            session=s,
            trials=j.trials.of_session(s.id),
            best=pick_of(j, s),
            counted_trials=j.trials.counted(s.id),
            llm_calls=j.logs.llm_calls(s.id),
            events=j.logs.events(s.id),
        )


class Leaderboard(BaseModel):
    """A session and its best trials by validation objective, best first."""

    model_config = _FROZEN

    session: SessionRecord
    trials: list[TrialRecord]


def leaderboard(settings: Settings, session_id: str, k: int = 10) -> Leaderboard:
    """The ``k`` best trials of a session (within its limits first).

    Raises:
        NoJournal, NotFound: no such session.
    """
    with open_journal(settings) as j:
        s = j.sessions.get(session_id)
        return Leaderboard(session=s, trials=j.trials.leaderboard(s.id, k))


class FoldRow(BaseModel):
    """One walk-forward fold a trial was scored on: its window, objective and metrics (its
    daily returns stay in the journal; the trial's equity curve is drawn from VALIDATION's)."""

    model_config = _FROZEN

    fold: int
    n_folds: int
    start_date: str
    end_date: str
    objective: float
    metrics: dict[str, Any]
    n_days: int
    elapsed_s: float
    reused_from: int | None


def fold_row(f: FoldRecord) -> FoldRow:
    """The fold as the detail panel shows it."""
    return FoldRow(
        fold=f.fold, n_folds=f.n_folds, start_date=f.start_date, end_date=f.end_date,
        objective=f.objective, metrics=f.metrics, n_days=len(f.returns), elapsed_s=f.elapsed_s,
        reused_from=f.reused_from,
    )  # fmt: skip


class TrialFull(BaseModel):
    """One trial as the detail panel shows it: everything, its series and prompt included,
    and the folds it was scored on (none for a trial from before folds)."""

    model_config = _FROZEN

    trial: TrialRecord
    row: TrialRow
    clips: list[ClipRecord]
    parent: TrialRecord | None
    folds: list[FoldRow] = []


def trial_detail(settings: Settings, trial_id: int) -> TrialFull:
    """Everything journaled about one trial, of any session.

    Raises:
        NoJournal, NotFound: no such trial.
    """
    with open_journal(settings) as j:
        return _full(j, j.trials.get(trial_id))


def trial_full(settings: Settings, session_id: str, trial_id: int) -> TrialFull:
    """One trial of ``session_id`` in full.

    Raises:
        NoJournal, NotFound: no such trial (in that session).
    """
    with open_journal(settings) as j:
        t = j.trials.get(trial_id)
        if t.session_id != session_id:
            raise NotFound(f"no trial {trial_id} in session {session_id}")
        return _full(j, t)


def trial_at(settings: Settings, session_id: str, idx: int) -> TrialFull:
    """Trial ``#idx`` of ``session_id`` in full (the page's address names trials by index).

    Raises:
        NoJournal, NotFound, NotFound: no such session or trial.
    """
    with open_journal(settings) as j:
        return _full(j, j.trials.at(session_id, idx))


def _full(j: Journal, t: TrialRecord) -> TrialFull:
    parent = j.trials.get(t.parent_id) if t.parent_id else None
    folds = [fold_row(f) for f in j.folds.of_trial(t.id)]
    run = (len(folds), folds[0].n_folds) if folds else None
    return TrialFull(trial=t, row=row_of(t, run), clips=j.logs.clips(t.id), parent=parent,
                     folds=folds)  # fmt: skip


class MetricDiff(BaseModel):
    model_config = _FROZEN

    a: Any
    b: Any
    b_minus_a: float | None


class TrialComparison(BaseModel):
    """Two trials side by side: the knobs that differ and every metric's difference."""

    model_config = _FROZEN

    a: TrialRecord
    b: TrialRecord
    same_session: bool
    config_differences: dict[str, dict[str, Any]]
    metrics: dict[str, MetricDiff]
    objective_b_minus_a: float | None


def _minus(b: float | None, a: float | None) -> float | None:
    return b - a if a is not None and b is not None else None


def compare_trials(settings: Settings, trial_a: int, trial_b: int) -> TrialComparison:
    """Compares two different trials (of any sessions).

    Raises:
        NoJournal, NotFound: no such trial.
        AlphaloopError: the same trial twice.
    """
    if trial_a == trial_b:
        raise AlphaloopError("compare_trials needs two different trial ids")
    with open_journal(settings) as j:
        a, b = j.trials.get(trial_a), j.trials.get(trial_b)
    ma, mb = a.metrics or {}, b.metrics or {}
    return TrialComparison(
        a=a,
        b=b,
        same_session=a.session_id == b.session_id,
        config_differences={
            k: {"a": a.config[k], "b": b.config[k]}
            for k in a.config
            if a.config.get(k) != b.config.get(k)
        },
        metrics={
            k: MetricDiff(a=ma.get(k), b=mb.get(k), b_minus_a=_minus(mb.get(k), ma.get(k)))
            for k in sorted(set(ma) | set(mb))
        },
        objective_b_minus_a=_minus(b.objective, a.objective),
    )


def metrics_chart(settings: Settings, kind: str, session_id: str | None = None) -> Any:
    """``research_progress`` (of ``session_id``, default the newest session) or
    ``ratio_curve`` (every run), drawn from trials read without their per-day series: these
    charts plot objectives and metrics only, and a page redraws them while a session runs.
    Returns an :class:`alphaloop.charts.Chart`.

    Raises:
        NoJournal: there is no journal.
        NotFound: no such session.
        InvalidRequest: nothing to draw yet, or a session given to ``ratio_curve``.
        ValueError: ``kind`` is another chart (draw it with ``build_chart``).
    """
    # Imported here: plotly is not a cost every journal read should pay.
    from alphaloop.charts import Chart, ratio_curve, research_progress
    from alphaloop.charts.build import ALL_RUNS_GOAL, raced_out

    if kind not in ("research_progress", "ratio_curve"):
        raise ValueError(f"metrics_chart draws research_progress or ratio_curve, not {kind!r}")
    with open_journal(settings) as j:
        if kind == "ratio_curve":
            if session_id is not None:
                raise InvalidRequest(
                    "ratio_curve ranks the trials of every run; a session does not apply"
                )
            figure = ratio_curve(j.trials.completed(series=False), j.sessions.list())
            return Chart(kind=kind, figure=figure, goal=ALL_RUNS_GOAL)
        if session_id is None:
            newest = j.sessions.list()
            if not newest:
                raise InvalidRequest(
                    "the journal has no sessions yet; run `alphaloop research` or `alphaloop train`"
                )
            session_id = newest[0].id
        s = j.sessions.get(session_id)
        figure = research_progress(s, j.trials.of_session(s.id, series=False), raced_out(j, s.id))
    return Chart(kind=kind, figure=figure, goal=s.goal, session_id=s.id)
