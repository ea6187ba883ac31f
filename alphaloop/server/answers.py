"""Response bodies of the REST API that wrap what ops returns: each route declares its answer,
so the OpenAPI document says what a client reads (models from ops as they are, wrapped here
where a route adds a field or lists several)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from alphaloop.ops.dashboard import SessionRow
from alphaloop.ops.knobs import KnobInfo
from alphaloop.ops.plots import Importance
from alphaloop.ops.records import PolicyRecord, SessionRecord
from alphaloop.ops.schedule import JobInfo
from alphaloop.ops.sessions import LiveTrial
from alphaloop.ops.tearsheet import TearSheet

_STRICT = ConfigDict(frozen=True, extra="forbid")


class Knobs(BaseModel):
    """The knobs with their bounds, and the rules a value is clipped by."""

    model_config = _STRICT

    knobs: list[KnobInfo]
    clip_rules: list[str]


class ActivePolicy(BaseModel):
    """The active policy of the library, or None when none is."""

    model_config = _STRICT

    policy: PolicyRecord | None


class Activated(BaseModel):
    """The entry made the active policy."""

    model_config = _STRICT

    policy: PolicyRecord
    active: bool


class ScheduleJobs(BaseModel):
    """The scheduler's jobs, and the pid of the scheduler running for this home (None when
    none runs)."""

    model_config = _STRICT

    scheduler_pid: int | None
    jobs: list[JobInfo]


class Health(BaseModel):
    """The server is up: its home's folder name, and whether a journal exists there yet."""

    model_config = _STRICT

    ok: bool
    home: str
    journal: bool


# A row as JSON leaves the server: a trial (its per-day series null unless asked for), a
# clip, a report. Typed by the journal's models; sent as their JSON.
JsonRow = dict[str, Any]


class Stopped(BaseModel):
    """A session asked to stop after its current trial, and its status now."""

    model_config = _STRICT

    session: str
    status: str


class ManualStatus(BaseModel):
    """The newest manual PPO run: its session, its trial (without prompt or curve), the
    trial's reward curve (``[env steps, mean episode reward]`` points), and whether its process
    is alive. All empty while no manual run was started."""

    model_config = _STRICT

    session: SessionRecord | None
    trial: JsonRow | None
    curve: list[Any]
    process_alive: bool


class ManualCurve(BaseModel):
    """The newest manual run's reward curve alone."""

    model_config = _STRICT

    session_id: str | None
    curve: list[Any]


class SessionJournal(BaseModel):
    """One session's journal: leaderboard, trials (id above the cursor) with their clips, the
    final report, chart reads, the newest validation report, and the cursor to poll from."""

    model_config = _STRICT

    session: SessionRecord
    counted_trials: int
    leaderboard: list[JsonRow]
    trials: list[JsonRow]
    final: JsonRow | None
    chart_reads: list[JsonRow]
    validation: JsonRow | None
    next_after: int


class PlotlyFigure(BaseModel):
    """A plotly figure as JSON (``Plotly.newPlot(div, fig.data, fig.layout)``): plotly's own
    schema, passed through."""

    model_config = ConfigDict(frozen=True, extra="allow")

    data: list[JsonRow]
    layout: JsonRow


class SessionRows(BaseModel):
    """Every research session, newest first."""

    model_config = _STRICT

    items: list[SessionRow]


class NoSession(BaseModel):
    """What a poll reads while there is no research session yet."""

    model_config = _STRICT

    session: None


class ImportanceAnswer(Importance):
    """Knob importance with its bar chart."""

    figure: PlotlyFigure


class ValidationAnswer(BaseModel):
    """A session's newest validation report (null until one ran), its gates' headline, what
    finalize found against the default and 1/N on TEST, and the command that validates it."""

    model_config = _STRICT

    finalize: JsonRow | None = Field(
        default=None,
        description="what finalize computed: PBO over the search (or why not), the pick's "
        "probabilistic and deflated Sharpe, the gates' summary (null before finalize)",
    )
    report: JsonRow | None
    headline: str | None
    verdict: SessionRow | None
    command: str


class TearSheetAnswer(BaseModel):
    """A tear sheet and its figures by name."""

    model_config = _STRICT

    sheet: TearSheet
    figures: dict[str, PlotlyFigure]


class Snapshot(BaseModel):
    """A research session as a poller reads it (``session`` null when there is none yet): the
    best so far, the trials running now, the trials above the cursor with their clips (rows
    without per-day series) and the cursor to poll from."""

    model_config = _STRICT

    session: SessionRecord | None
    counted_trials: int | None = None
    best: JsonRow | None
    running: list[LiveTrial]
    resume: str | None = None
    trials: list[JsonRow]
    next_after: int


class SnapshotWithChart(Snapshot):
    """A snapshot with the session's progress chart (null while no trial has finished)."""

    chart: PlotlyFigure | None
