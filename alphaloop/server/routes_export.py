"""Route of a session's exports: the session as an Optuna study file (the same operation as
``alphaloop export optuna``, written to a file and sent as a download)."""

from __future__ import annotations

from fastapi import APIRouter, Path, Query, Request
from fastapi.responses import FileResponse
from starlette.background import BackgroundTask

from alphaloop.ops.export import ExportFormat, export_optuna_file
from alphaloop.server.models import SESSION_ID

router = APIRouter(prefix="/api", tags=["export"])
JOURNAL_TYPE = "application/x-ndjson"  # an Optuna journal file: one JSON entry a line
SQLITE_TYPE = "application/vnd.sqlite3"
_FILES = {"journal": (JOURNAL_TYPE, "log"), "sqlite": (SQLITE_TYPE, "db")}
_FORMAT = Query(
    "journal",
    description="journal: an Optuna journal file (fast; optuna-dashboard FILE); sqlite: a "
    "SQLite study (written a trial at a time: much slower; optuna-dashboard sqlite:///FILE)",
)


@router.get(
    "/sessions/{session_id}/export/optuna",
    response_class=FileResponse,
    responses={
        200: {
            "content": {JOURNAL_TYPE: {}, SQLITE_TYPE: {}},
            "description": "an Optuna journal file, or an Optuna SQLite study",
        }
    },
)
def export_optuna(
    request: Request,
    session_id: str = Path(pattern=SESSION_ID, max_length=40),
    format: ExportFormat = _FORMAT,
) -> FileResponse:
    """The session as an Optuna study file named after the session: an Optuna journal file
    (``SESSION_ID.optuna.log``; open it with ``optuna-dashboard FILE``) or, with
    ``format=sqlite``, a SQLite study (``SESSION_ID.optuna.db``; ``optuna-dashboard
    sqlite:///FILE``). The study is named after the session. Trials, params, states and attrs as
    ``alphaloop export optuna`` writes them. 422 for a session the journal does not hold."""
    path, _ = export_optuna_file(request.app.state.settings, session_id, format)
    media_type, suffix = _FILES[format]
    return FileResponse(
        path,
        media_type=media_type,
        filename=f"{session_id}.optuna.{suffix}",
        background=BackgroundTask(path.unlink, missing_ok=True),
    )
