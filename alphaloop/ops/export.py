"""A session as an Optuna study: ``alphaloop export optuna`` and the API's study download.

The study is written through Optuna's public storage API into an Optuna journal file (a path:
``JournalStorage``, the default) or any RDB URL Optuna accepts (``RDBStorage``), so what is
written is an ordinary study: optuna-dashboard, ``optuna.visualization`` and
``optuna.importance`` open it as they open their own (:mod:`alphaloop.ops._optuna_storage`).

How the journal maps onto the study:

- one Optuna trial per trial row the search scored or is scoring (kinds ``baseline``,
  ``search`` and ``confirm``), in the journal's index order, so a first export numbers them as
  the journal does;
- params: the knobs the session's mode uses, with distributions from the knobs' bounds (log
  scales as ``log=True``, :func:`alphaloop.knobs.optuna_distributions`);
- value: the trial's objective; the study maximises it, as the session did;
- state: ``keep`` and ``discard`` COMPLETE; a trial raced out (scored on fewer folds than the
  session has) PRUNED; ``crash``, ``timeout`` and ``invalid`` FAIL; ``running`` RUNNING;
- intermediate values: each fold's objective, at step = the fold's number (0 the oldest
  window), so a raced-out trial shows the one fold it ran;
- user attrs: ``kind``, ``status`` (as every front end says it: ``ran``, ``raced out``...),
  ``proposer``, ``reason`` (and the journal's ids, seed, error, rationale, metrics over the
  folds);
- TEST: finalize's one evaluation of the pick and of the default on the sealed window is not a
  trial of the study. Its value is measured on other days and would enter the search's history
  and ``best_trial`` as if the search had seen it; its results are ``test_*`` user attrs of the
  trial it evaluated, and the session's verdict (pick, its reason, the gates) is in the study's
  user attrs.

Running the export again updates the study instead of adding a second copy: trials are matched
by their journal id (user attr ``alphaloop_trial_id``); new rows are added, a trial exported
while it ran is completed in place, and an unchanged one is left alone (an export that changes
nothing writes nothing). Optuna never changes a finished trial, so when one no longer matches the
journal (the pick's trial gets its TEST results when the session finishes after an earlier
export) the study is written again whole. Everything is built and checked in memory before the
storage is touched: bad input writes nothing. A journal file gets all of an export or none of
it; a database gets each trial in its own commit (:mod:`alphaloop.ops._optuna_storage`).
"""

from __future__ import annotations

import math
import uuid
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from alphaloop.exceptions import InvalidRequest, NotFound
from alphaloop.journal import (
    FoldScores,
    SessionRecord,
    TrialKind,
    TrialRecord,
    TrialStatus,
    jsonable,
)
from alphaloop.journal.status import RACED_OUT, shown_status
from alphaloop.knobs import KNOBS, knobs_for_mode, optuna_distributions
from alphaloop.ops import _optuna_storage as optuna_storage
from alphaloop.ops._journal import open_journal
from alphaloop.ops._optuna_study import SESSION_ID_ATTR, TRIAL_ID_ATTR, Wanted
from alphaloop.settings import Settings

if TYPE_CHECKING:
    from optuna.trial import FrozenTrial

ExportFormat = Literal["journal", "sqlite"]  # the API's download: an Optuna journal or SQLite file
_TEXT_CHARS = 2000  # an error or rationale longer than this is cut: attrs are shown in tables


class OptunaExport(BaseModel):
    """What an export wrote: the study, where, and its trials by Optuna state.

    Attributes:
        added: trials new in the study; ``completed``: trials exported while running and
            finished since, completed in place; ``unchanged``: trials already as the journal
            has them; ``rewritten``: the study was written again whole (a finished trial no
            longer matched the journal).
        test_rows: TEST evaluations carried as user attrs of the trial they evaluated.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    session_id: str
    study_name: str
    storage: str = Field(
        description="the Optuna journal file as given, or the database URL, its password hidden"
    )
    n_trials: int
    states: dict[str, int]
    added: int
    completed: int
    unchanged: int
    rewritten: bool
    test_rows: int


def export_optuna(
    settings: Settings, session_id: str, storage: str, study_name: str | None = None
) -> OptunaExport:
    """Writes session ``session_id`` as an Optuna study into ``storage`` (see the module doc).

    Args:
        settings: where the journal is.
        session_id: the session to export (running or finished).
        storage: an Optuna journal file (``study.log``: a path, the default form), or an RDB
            URL Optuna accepts (``sqlite:///study.db``, ``postgresql://...``).
        study_name: the study's name (default: the session id).

    Raises:
        InvalidRequest: no such session, a storage Optuna refuses (a URL that is not one, a file
            that is not an Optuna journal, alphaloop's own journal), or a study of that name
            holding something else than this session's export. Nothing is written then.
        Conflict: another export of the same study met this one (nothing is written into a
            journal file; a database keeps what was committed, and the next export repairs it).
    """
    session, rows, folds = _read(settings, session_id)
    target = optuna_storage.target_of(storage, settings)
    return _export(settings, session, rows, folds, target, study_name)


def export_optuna_file(
    settings: Settings, session_id: str, kind: ExportFormat = "journal"
) -> tuple[Path, OptunaExport]:
    """The session as a new study file in the home's scratch folder, an Optuna journal file or
    a SQLite database (the API's download; the caller deletes the file once sent). Messages name
    the file as the download does, never by its path.

    Raises:
        InvalidRequest: no such session (nothing is left behind).
    """
    session, rows, folds = _read(settings, session_id)
    folder = settings.scratch_dir / "exports"
    folder.mkdir(parents=True, exist_ok=True)
    suffix = ".log" if kind == "journal" else ".db"
    path = folder / f"{session_id}-{uuid.uuid4().hex[:12]}{suffix}"
    shown = f"{session_id}.optuna{suffix}"
    if kind == "journal":
        target = optuna_storage.journal_target(path, shown, settings)
    else:
        target = optuna_storage.Target(shown, url=f"sqlite:///{path.absolute()}")
    try:
        done = _export(settings, session, rows, folds, target, None)
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return path, done


def _export(
    settings: Settings,
    session: SessionRecord,
    rows: list[TrialRecord],
    folds: dict[int, FoldScores],
    target: optuna_storage.Target,
    study_name: str | None,
) -> OptunaExport:
    name = study_name or session.id
    if not name.strip():
        raise InvalidRequest("--study-name must not be blank")
    wanted, tests = _trials(session, rows, folds)
    want = Wanted(name, session.id, _study_attrs(session), wanted)
    written = optuna_storage.write(target, settings, want)
    states: dict[str, int] = {}
    for t in wanted:
        states[t.state.name] = states.get(t.state.name, 0) + 1
    return OptunaExport(
        session_id=session.id,
        study_name=name,
        storage=target.shown,
        n_trials=len(wanted),
        states=states,
        added=written.added,
        completed=written.completed,
        unchanged=written.unchanged,
        rewritten=written.rewritten,
        test_rows=tests,
    )


# --- the journal's side ------------------------------------------------------------------------


def _read(
    settings: Settings, session_id: str
) -> tuple[SessionRecord, list[TrialRecord], dict[int, FoldScores]]:
    try:
        with open_journal(settings) as j:
            session = j.sessions.get(session_id)
            rows = j.trials.of_session(session_id, series=False)
            folds = j.folds.scores_of_session(session_id)
    except NotFound as err:  # no journal, or no such session
        raise InvalidRequest(f"cannot export: {err}") from err
    return session, rows, folds


def _trials(
    session: SessionRecord, rows: list[TrialRecord], folds: dict[int, FoldScores]
) -> tuple[list[FrozenTrial], int]:
    """The study's trials in journal order, built and validated by Optuna; and how many TEST
    rows were folded into the trials they evaluated."""
    tests = {t.parent_id: t for t in rows if t.kind == TrialKind.test and t.parent_id is not None}
    dists = optuna_distributions(knobs_for_mode(session.mode))
    built = [
        _trial(t, folds.get(t.id), dists, tests.get(t.id)) for t in rows if t.kind != TrialKind.test
    ]
    return built, sum(1 for t in rows if t.kind == TrialKind.test)


def _shown(row: TrialRecord, folds: FoldScores | None) -> str:
    """The row's status as every front end says it (``ran``, ``raced out``...)."""
    if folds is None:
        return shown_status(row.kind, row.status)
    return shown_status(row.kind, row.status, len(folds.objectives), folds.n_folds)


def _state(row: TrialRecord, folds: FoldScores | None) -> Any:
    from optuna.trial import TrialState

    if row.status == TrialStatus.running:
        return TrialState.RUNNING
    if row.status not in (TrialStatus.keep, TrialStatus.discard) or not _finite(row.objective):
        return TrialState.FAIL
    if _shown(row, folds) == RACED_OUT:
        return TrialState.PRUNED  # its other folds were never run
    return TrialState.COMPLETE


def _trial(
    row: TrialRecord,
    folds: FoldScores | None,
    dists: dict[str, Any],
    test: TrialRecord | None,
) -> FrozenTrial:
    from optuna.trial import TrialState, create_trial

    state = _state(row, folds)
    params = {k: _param(k, row.config[k]) for k in dists if k in row.config}
    made = create_trial(
        state=state,
        value=row.objective if state in (TrialState.COMPLETE, TrialState.PRUNED) else None,
        params=params,
        distributions={k: dists[k] for k in params},
        user_attrs=_attrs(row, _shown(row, folds), test),
        intermediate_values={
            fold: value
            for fold, value in (folds.objectives.items() if folds else ())
            if _finite(value)
        },
    )
    made.datetime_start = _local(row.started_at)
    if state.is_finished():
        made.datetime_complete = _local(row.finished_at or row.started_at)
    return made


def _attrs(row: TrialRecord, status: str, test: TrialRecord | None) -> dict[str, Any]:
    attrs: dict[str, Any] = {
        TRIAL_ID_ATTR: row.id,
        "idx": row.idx,
        "kind": row.kind.value,
        "status": status,
        "proposer": row.proposer,
        "reason": row.reason,
        "seed": row.seed,
        "parent_trial_id": row.parent_id,
        "error": _cut(row.error),
        "rationale": _cut(row.rationale),
        "violation": row.violation,
        "n_seeds": row.n_seeds,
        "seed_mean": row.seed_mean,
        "metrics": row.metrics,
    }
    if test is not None:
        attrs |= {
            "test_trial_id": test.id,
            "test_status": shown_status(test.kind, test.status),
            "test_objective": test.objective,
            "test": test.metrics,
        }
    return {k: jsonable(v) for k, v in attrs.items() if v is not None}


def _study_attrs(session: SessionRecord) -> dict[str, Any]:
    final = session.final
    attrs: dict[str, Any] = {
        SESSION_ID_ATTR: session.id,
        "goal": session.goal,
        "mode": session.mode,
        "objective": session.objective,
        "proposer": session.proposer,
        "data": session.data_source,
        "session_status": session.status.value,
    }
    if final is not None:
        attrs |= {
            "stop_reason": final.stop_reason,
            "pick": final.pick,
            "pick_reason": final.pick_reason,
            "gates_passed": final.gates_passed,
            "gates_summary": final.gates_summary,
        }
    return {k: jsonable(v) for k, v in attrs.items() if v is not None}


def _param(name: str, value: Any) -> float | int:
    return int(value) if KNOBS[name].is_int else float(value)


def _finite(x: float | None) -> bool:
    return x is not None and math.isfinite(x)


def _cut(text: str | None) -> str | None:
    if text is None or len(text) <= _TEXT_CHARS:
        return text
    return text[: _TEXT_CHARS - 1] + "\u2026"


def _local(stamp: str) -> datetime:
    """A journal timestamp (ISO 8601, UTC) as Optuna keeps times: naive, local."""
    return datetime.fromisoformat(stamp).astimezone().replace(tzinfo=None)


__all__ = ["ExportFormat", "OptunaExport", "export_optuna", "export_optuna_file"]
