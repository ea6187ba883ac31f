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


@router.get("/dashboard/sessions")
def sessions(request: Request) -> dict[str, Any]:
    """Every research session, newest first: goal, mode, proposer, status (running, stopping,
    interrupted, stopped, finished, failed), trials, best validation and TEST objective, the
    default's TEST objective, the pick, and the pick against the default and 1/N."""
    rows = dashboard.session_rows(_settings(request))
    return {"items": [jsonable(r.model_dump(mode="json")) for r in rows]}


@router.get("/pulse")
def pulse(
    request: Request, session_id: str | None = Query(None, pattern=SESSION_ID, max_length=40)
) -> dict[str, Any]:
    """What the page polls about a session (default: the newest), at a cost that does not grow
    with it: the session, its status (stopped told from finished), its number of trials, its
    last trials (the running ones among them) and its best. ``session`` is null when there is
    no research session yet."""
    found = dashboard.pulse(_settings(request), session_id)
    if found is None:
        return {"session": None}
    return jsonable(found.model_dump(mode="json"))


@router.get("/sessions/{session_id}/history")
def session_history(
    request: Request,
    session_id: str = SessionPath,
    points: int = Query(plots.HISTORY_POINTS, ge=10, le=MAX_ID, description="rows at most"),
) -> dict[str, Any]:
    """The optimisation history as columns (index, status, objective of each search trial,
    the incumbent: the best kept objective so far) and the default's objective; past
    ``points`` search trials a sample that keeps each slice's extremes and every change of the
    incumbent (``sampled``; ``total`` counts them all)."""
    found = plots.history(_settings(request), session_id, points)
    return jsonable(found.model_dump(mode="json"))


@router.get("/sessions/{session_id}/study")
def session_study(
    request: Request,
    session_id: str = SessionPath,
    points: int = Query(plots.STUDY_POINTS, ge=10, le=20_000, description="rows at most"),
) -> dict[str, Any]:
    """The session's search trials as columns for the search plots (slice, contour, parallel
    coordinates, EDF, timeline, per-fold intermediate values): shown status, comparable
    objective, start and finish, each knob that varied, each fold's objective; a sample past
    ``points`` trials (the best kept), the objective's distribution exact."""
    return jsonable(plots.study(_settings(request), session_id, points).model_dump(mode="json"))


@router.get("/sessions/{session_id}/calendar")
def session_calendar(request: Request, session_id: str = SessionPath) -> dict[str, Any]:
    """The trading days of the session's VALIDATION and TEST windows (the dates of a trial's
    daily returns)."""
    return dashboard.calendar(_settings(request), session_id).model_dump(mode="json")


@router.get("/sessions/{session_id}/trials")
def trials(
    request: Request,
    session_id: str = SessionPath,
    f: TrialFilter = Filter,
    offset: int = Query(0, ge=0, le=MAX_ID),
    limit: int = Query(50, ge=1, le=dashboard.MAX_PAGE),
) -> dict[str, Any]:
    """One page of a session's trials, sorted and filtered by the server (without their
    per-day series or prompt; the trial's own route has them); ``total`` counts every match."""
    page = dashboard.trial_page(_settings(request), session_id, f, offset=offset, limit=limit)
    return jsonable(page.model_dump(mode="json"))


@router.get("/sessions/{session_id}/trials.csv")
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


@router.get("/sessions/{session_id}/trials/{trial_id}")
def trial(request: Request, session_id: str = SessionPath, trial_id: int = IdPath()) -> Any:
    """One trial in full: config, delta, clips, rationale, the exact prompt it was proposed
    with, metrics, and its validation returns (the equity curve)."""
    full = ops.sessions.trial_full(_settings(request), session_id, trial_id)
    return jsonable(full.model_dump(mode="json", exclude={"trial": {"traceback_tail"}}))


@router.get("/sessions/{session_id}/trials/at/{idx}")
def trial_at(
    request: Request, session_id: str = SessionPath, idx: int = Path(ge=0, le=MAX_ID)
) -> Any:
    """Trial ``#idx`` of the session in full, as ``/trials/{trial_id}`` answers it."""
    full = ops.sessions.trial_at(_settings(request), session_id, idx)
    return jsonable(full.model_dump(mode="json", exclude={"trial": {"traceback_tail"}}))


@router.get("/sessions/{session_id}/plots/parallel")
def parallel(request: Request, session_id: str = SessionPath) -> dict[str, Any]:
    """Parallel coordinates (plotly figure JSON): the knobs that varied against the objective,
    one line per scored search trial."""
    return jsonable(plots.parallel_coordinates(_settings(request), session_id))


@router.get("/sessions/{session_id}/plots/importance")
def importance(
    request: Request,
    session_id: str = SessionPath,
    evaluator: plots.Evaluator = "fanova",
) -> dict[str, Any]:
    """Knob importance by ``optuna.importance`` over the session's scored search trials, with
    its bar chart (plotly figure JSON) under ``figure``."""
    imp = plots.knob_importance(_settings(request), session_id, evaluator)
    return {**imp.model_dump(mode="json"), "figure": plots.importance_figure(imp)}


@router.get("/sessions/{session_id}/validation")
def validation(request: Request, session_id: str = SessionPath) -> dict[str, Any]:
    """The newest validation report of a session (gates with reasons, PBO, deflated Sharpe,
    walk-forward, stress; null until ``alphaloop validate`` ran) next to what finalize found
    against the default and 1/N on TEST."""
    settings = _settings(request)
    report = ops.validate.latest_validation(settings, session_id)
    row = next((r for r in dashboard.session_rows(settings) if r.id == session_id), None)
    return {
        "report": jsonable(report.journaled()) if report else None,
        # "NO-GO: beats_equal_weight failed (p-value 0.21, ...); ..." as the terminal says it.
        "headline": report.gates.headline() if report else None,
        "verdict": row.model_dump(mode="json") if row else None,
        "command": f"alphaloop validate {session_id}",
    }


@router.get("/sessions/{session_id}/report")
def session_report(request: Request, session_id: str = SessionPath) -> dict[str, Any]:
    """The tear sheet of a finished session (what ``alphaloop report`` writes): the pick
    against the default config and 1/N on TEST, its allocation, the gates, the search and the
    notes, with its figures (plotly figure JSON by name)."""
    return jsonable(tearsheet.build_tearsheet(_settings(request), session_id).as_json())


@router.get("/policies/{policy_id}/report")
def policy_report(request: Request, policy_id: int = IdPath()) -> dict[str, Any]:
    """The tear sheet of a library policy: its session's, with the policy's trial as the
    pick."""
    return jsonable(tearsheet.build_tearsheet(_settings(request), policy_id=policy_id).as_json())


@router.get("/pm/history")
def book_history(
    request: Request,
    book: str = Query("main", pattern=r"^[A-Za-z0-9_\-]{1,32}$"),
    limit: int = Query(2000, ge=1, le=20_000),
) -> dict[str, Any]:
    """A book's last ``limit`` ticks, oldest first: equity before each, target weights by
    symbol, kill-switch status and verdict (for the equity and weights charts)."""
    return jsonable(dashboard.book_history(_settings(request), book, limit).model_dump())


class NoteEdit(BaseModel):
    """A new version of a note, made on the version the editor read (0: a first note)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str = Field(max_length=notes.MAX_NOTE_CHARS)
    base_version: int = Field(ge=0, le=MAX_ID)
    trial_id: int | None = Field(default=None, ge=1, le=MAX_ID)


@router.get("/sessions/{session_id}/notes")
def note(
    request: Request,
    session_id: str = SessionPath,
    trial_id: int | None = Query(None, ge=1, le=MAX_ID),
) -> dict[str, Any]:
    """The note on a session (or, with ``trial_id``, one of its trials): its text, version and
    every earlier version."""
    return notes.read_note(_settings(request), session_id, trial_id).model_dump(mode="json")


@router.put("/sessions/{session_id}/notes")
def note_edit(request: Request, body: NoteEdit, session_id: str = SessionPath) -> dict[str, Any]:
    """Save a note as its next version. 409 when it was edited since ``base_version``: reload
    it and edit again (nothing is overwritten unseen)."""
    saved = notes.save_note(
        _settings(request), session_id, body.trial_id, body.text, body.base_version
    )
    return saved.model_dump(mode="json")


__all__ = ["router"]
