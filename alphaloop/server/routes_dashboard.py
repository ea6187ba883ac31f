"""Routes of the dashboard: the session list with verdicts, a session's trials paged, sorted and
filtered by the server (and exported as CSV), one trial in full."""

from __future__ import annotations

import itertools
from typing import Any, Literal

from fastapi import APIRouter, Depends, Path, Query, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from alphaloop import ops
from alphaloop.ops import dashboard, notes, plots, tearsheet
from alphaloop.ops.records import TrialFilter, jsonable
from alphaloop.ops.rows import SHOWN_STATUSES, ShownStatus
from alphaloop.server.answers import (
    ImportanceAnswer,
    NoSession,
    PlotlyFigure,
    SessionRows,
    TearSheetAnswer,
    ValidationAnswer,
)
from alphaloop.server.models import MAX_ID, SESSION_ID, IdPath

router = APIRouter(prefix="/api", tags=["dashboard"])
SessionPath = Path(pattern=SESSION_ID, max_length=40)
_NAME = r"^[a-z_]{1,32}$"
Kind = Literal["baseline", "search", "confirm", "test"]
Statuses = Query(
    [],
    description="only trials of these shown statuses (repeat the parameter): "
    + ", ".join(SHOWN_STATUSES),
)
Kinds = Query([], description="only trials of these kinds (repeat the parameter)")


def _settings(request: Request) -> Any:
    return request.app.state.settings


def trial_filter(
    status: list[ShownStatus] = Statuses,
    kind: list[Kind] = Kinds,
    kept: bool = Query(False, description="only kept trials (status keep)"),
    knob: str | None = Query(None, pattern=_NAME, description="filter on this knob's value"),
    low: float | None = Query(None, description="the knob's value at least this"),
    high: float | None = Query(None, description="the knob's value at most this"),
    sort: str = Query("idx", pattern=_NAME, description="a column (idx, objective...) or knob"),
    order: Literal["asc", "desc"] = "asc",
) -> TrialFilter:
    statuses = ("keep",) if kept else tuple(status)
    return TrialFilter.model_validate(
        {"statuses": statuses, "kinds": tuple(kind), "knob": knob, "low": low, "high": high,
         "sort": sort, "descending": order == "desc"}
    )  # fmt: skip


Filter = Depends(trial_filter)
# One trial in full, less its traceback's tail (it names files of this machine: it stays in the
# journal).
_FULL: dict[str, Any] = {
    "response_model": ops.sessions.TrialFull,
    "response_model_exclude": {"trial": {"traceback_tail"}},
}


@router.get("/dashboard/sessions", response_model=SessionRows)
def sessions(request: Request) -> SessionRows:
    """Every research session, newest first: goal, mode, proposer, status (running, stopping,
    interrupted, stopped, finished, failed), trials, best validation and TEST objective, the
    default's TEST objective, the pick, and the pick against the default and 1/N."""
    return SessionRows(items=dashboard.session_rows(_settings(request)))


@router.get("/pulse", response_model=dashboard.Pulse | NoSession)
def pulse(
    request: Request, session_id: str | None = Query(None, pattern=SESSION_ID, max_length=40)
) -> dashboard.Pulse | NoSession:
    """What the page polls about a session (default: the newest), at a cost that does not grow
    with it: the session, its status (stopped told from finished), its number of trials, its
    last trials (the running ones among them) and its best. ``session`` is null when there is
    no research session yet."""
    found = dashboard.pulse(_settings(request), session_id)
    return NoSession(session=None) if found is None else found


@router.get("/sessions/{session_id}/history", response_model=plots.History)
def session_history(
    request: Request,
    session_id: str = SessionPath,
    points: int = Query(plots.HISTORY_POINTS, ge=10, le=MAX_ID, description="rows at most"),
) -> plots.History:
    """The optimisation history as columns (index, status, objective of each search trial,
    the incumbent: the best kept objective so far) and the default's objective; past
    ``points`` search trials a sample that keeps each slice's extremes and every change of the
    incumbent (``sampled``; ``total`` counts them all)."""
    return plots.history(_settings(request), session_id, points)


@router.get("/sessions/{session_id}/study", response_model=plots.Study)
def session_study(
    request: Request,
    session_id: str = SessionPath,
    points: int = Query(plots.STUDY_POINTS, ge=10, le=20_000, description="rows at most"),
) -> plots.Study:
    """The session's search trials as columns for the search plots (slice, contour, parallel
    coordinates, EDF, timeline, per-fold intermediate values): shown status, comparable
    objective, start and finish, each knob that varied, each fold's objective; a sample past
    ``points`` trials (the best kept), the objective's distribution exact."""
    return plots.study(_settings(request), session_id, points)


@router.get("/sessions/{session_id}/calendar", response_model=dashboard.Calendar)
def session_calendar(request: Request, session_id: str = SessionPath) -> dashboard.Calendar:
    """The trading days of the session's VALIDATION and TEST windows (the dates of a trial's
    daily returns)."""
    return dashboard.calendar(_settings(request), session_id)


@router.get("/sessions/{session_id}/trials", response_model=dashboard.TrialPage)
def trials(
    request: Request,
    session_id: str = SessionPath,
    f: TrialFilter = Filter,
    offset: int = Query(0, ge=0, le=MAX_ID),
    limit: int = Query(50, ge=1, le=dashboard.MAX_PAGE),
) -> dashboard.TrialPage:
    """One page of a session's trials, sorted and filtered by the server (without their
    per-day series or prompt; the trial's own route has them); ``total`` counts every match."""
    return dashboard.trial_page(_settings(request), session_id, f, offset=offset, limit=limit)


@router.get(
    "/sessions/{session_id}/trials.csv",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/csv": {}}, "description": "the trials as CSV"}},
)
def trials_csv(
    request: Request, session_id: str = SessionPath, f: TrialFilter = Filter
) -> StreamingResponse:
    """The matching trials as CSV (every match, not a page): columns, knobs, metrics."""
    lines = dashboard.trial_csv(_settings(request), session_id, f)
    first = next(lines)  # the errors (no session, a bad column) come before the answer starts
    return StreamingResponse(
        itertools.chain([first], lines),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{session_id}-trials.csv"'},
    )


@router.get("/sessions/{session_id}/trials/{trial_id}", **_FULL)
def trial(
    request: Request, session_id: str = SessionPath, trial_id: int = IdPath()
) -> ops.sessions.TrialFull:
    """One trial in full: config, delta, clips, rationale, the exact prompt it was proposed
    with, metrics, and its validation returns (the equity curve)."""
    return ops.sessions.trial_full(_settings(request), session_id, trial_id)


@router.get("/sessions/{session_id}/trials/at/{idx}", **_FULL)
def trial_at(
    request: Request, session_id: str = SessionPath, idx: int = Path(ge=0, le=MAX_ID)
) -> ops.sessions.TrialFull:
    """Trial ``#idx`` of the session in full, as ``/trials/{trial_id}`` answers it."""
    return ops.sessions.trial_at(_settings(request), session_id, idx)


@router.get("/sessions/{session_id}/plots/parallel", response_model=PlotlyFigure)
def parallel(request: Request, session_id: str = SessionPath) -> PlotlyFigure:
    """Parallel coordinates (plotly figure JSON): the knobs that varied against the objective,
    one line per scored search trial."""
    return PlotlyFigure(**jsonable(plots.parallel_coordinates(_settings(request), session_id)))


@router.get("/sessions/{session_id}/plots/importance", response_model=ImportanceAnswer)
def importance(
    request: Request,
    session_id: str = SessionPath,
    evaluator: plots.Evaluator = "fanova",
) -> ImportanceAnswer:
    """Knob importance by ``optuna.importance`` over the session's scored search trials, with
    its bar chart (plotly figure JSON) under ``figure``."""
    imp = plots.knob_importance(_settings(request), session_id, evaluator)
    figure = PlotlyFigure(**jsonable(plots.importance_figure(imp)))
    return ImportanceAnswer(**dict(imp), figure=figure)


_FINALIZE_EVIDENCE = {
    "pbo", "pbo_note", "probabilistic_sharpe", "deflated_sharpe", "dsr_set", "dsr_n_trials",
    "n_effective_trials", "deflated_sharpe_effective", "gates_passed", "gates_summary",
}  # fmt: skip


@router.get("/sessions/{session_id}/validation", response_model=ValidationAnswer)
def validation(request: Request, session_id: str = SessionPath) -> ValidationAnswer:
    """The newest validation report of a session (gates with reasons, PBO, deflated Sharpe,
    walk-forward, stress; null until ``alphaloop validate`` ran) next to what finalize found
    against the default and 1/N on TEST."""
    settings = _settings(request)
    report = ops.validate.latest_validation(settings, session_id)
    row = next((r for r in dashboard.session_rows(settings) if r.id == session_id), None)
    final = ops.sessions.get_session(settings, session_id).final
    return ValidationAnswer(
        # what finalize computed already (PBO over the search, the pick's deflated Sharpe)
        finalize=final.model_dump(mode="json", include=_FINALIZE_EVIDENCE) if final else None,
        report=jsonable(report.journaled()) if report else None,
        # "NO-GO: beats_equal_weight failed (p-value 0.21, ...); ..." as the terminal says it.
        headline=report.gates.headline() if report else None,
        verdict=row,
        command=f"alphaloop validate {session_id}",
    )


@router.get("/sessions/{session_id}/report", response_model=TearSheetAnswer)
def session_report(request: Request, session_id: str = SessionPath) -> TearSheetAnswer:
    """The tear sheet of a finished session (what ``alphaloop report`` writes): the pick
    against the default config and 1/N on TEST, its allocation, the gates, the search and the
    notes, with its figures (plotly figure JSON by name)."""
    return _sheet(tearsheet.build_tearsheet(_settings(request), session_id))


@router.get("/policies/{policy_id}/report", response_model=TearSheetAnswer)
def policy_report(request: Request, policy_id: int = IdPath()) -> TearSheetAnswer:
    """The tear sheet of a library policy: its session's, with the policy's trial as the
    pick."""
    return _sheet(tearsheet.build_tearsheet(_settings(request), policy_id=policy_id))


def _sheet(drawn: tearsheet.Tearsheet) -> TearSheetAnswer:
    figures = drawn.as_json()["figures"]
    return TearSheetAnswer(
        sheet=drawn.sheet, figures={k: PlotlyFigure(**jsonable(f)) for k, f in figures.items()}
    )


@router.get("/pm/history", response_model=dashboard.BookHistory)
def book_history(
    request: Request,
    book: str = Query("main", pattern=r"^[A-Za-z0-9_\-]{1,32}$"),
    limit: int = Query(2000, ge=1, le=20_000),
) -> dashboard.BookHistory:
    """A book's last ``limit`` ticks, oldest first: equity before each, target weights by
    symbol, kill-switch status and verdict (for the equity and weights charts)."""
    return dashboard.book_history(_settings(request), book, limit)


class NoteEdit(BaseModel):
    """A new version of a note, made on the version the editor read (0: a first note)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str = Field(max_length=notes.MAX_NOTE_CHARS)
    base_version: int = Field(ge=0, le=MAX_ID)
    trial_id: int | None = Field(default=None, ge=1, le=MAX_ID)


@router.get("/sessions/{session_id}/notes", response_model=notes.Note)
def note(
    request: Request,
    session_id: str = SessionPath,
    trial_id: int | None = Query(None, ge=1, le=MAX_ID),
) -> notes.Note:
    """The note on a session (or, with ``trial_id``, one of its trials): its text, version and
    every earlier version."""
    return notes.read_note(_settings(request), session_id, trial_id)


@router.put("/sessions/{session_id}/notes", response_model=notes.Note)
def note_edit(request: Request, body: NoteEdit, session_id: str = SessionPath) -> notes.Note:
    """Save a note as its next version. 409 when it was edited since ``base_version``: reload
    it and edit again (nothing is overwritten unseen)."""
    return notes.save_note(
        _settings(request), session_id, body.trial_id, body.text, body.base_version
    )


__all__ = ["router"]
