"""Route of a session's exports: the session as an Optuna study file (the same operation as
``alphaloop export optuna``, written to a SQLite file and sent as a download)."""

from __future__ import annotations

from fastapi import APIRouter, Path, Request
from fastapi.responses import FileResponse
from starlette.background import BackgroundTask

from alphaloop.ops.export import export_optuna_file
from alphaloop.server.models import SESSION_ID

router = APIRouter(prefix="/api", tags=["export"])
SQLITE_TYPE = "application/vnd.sqlite3"


@router.get(
    "/sessions/{session_id}/export/optuna",
    response_class=FileResponse,
    responses={200: {"content": {SQLITE_TYPE: {}}, "description": "an Optuna SQLite study"}},
)
def export_optuna(
    request: Request, session_id: str = Path(pattern=SESSION_ID, max_length=40)
) -> FileResponse:
    """The session as an Optuna study in a SQLite file, named after the session: open it with
    ``optuna-dashboard sqlite:///FILE`` or ``optuna.load_study(study_name=SESSION_ID,
    storage="sqlite:///FILE")``. Trials, params, states and attrs as ``alphaloop export
    optuna`` writes them. 422 for a session the journal does not hold."""
    path, _ = export_optuna_file(request.app.state.settings, session_id)
    return FileResponse(
        path,
        media_type=SQLITE_TYPE,
        filename=f"{session_id}.optuna.db",
        background=BackgroundTask(path.unlink, missing_ok=True),
    )
