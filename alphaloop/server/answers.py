"""Response bodies of the REST API that wrap what ops returns: each route declares its answer,
so the OpenAPI document says what a client reads (models from ops as they are, wrapped here
where a route adds a field or lists several)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from alphaloop.ops.knobs import KnobInfo
from alphaloop.ops.records import PolicyRecord
from alphaloop.ops.schedule import JobInfo

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
