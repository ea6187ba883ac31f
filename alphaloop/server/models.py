"""Request and response bodies of the REST API: the OpenAPI schema at ``/docs`` is the
contract. Requests are strict (unknown fields refused) and bounded."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import Path, Query
from pydantic import BaseModel, ConfigDict, Field

_STRICT = ConfigDict(frozen=True, extra="forbid")

# SQLite's largest integer: a larger id or cursor is refused (422) before it reaches a query,
# where it would overflow into a 500.
MAX_ID = 2**63 - 1
After = Query(
    0, ge=0, le=MAX_ID, description="only items after this cursor (the last answer's next_after)"
)


def IdPath() -> Any:
    """A journal id in the path: 1 up to :data:`MAX_ID`."""
    return Path(ge=1, le=MAX_ID)


# Ids, never paths: a session id as the journal draws it, data by name only.
SESSION_ID = r"^s-\d{8}-\d{6}-[0-9a-f]{4}$"
SessionId = Annotated[str, Field(pattern=SESSION_ID, max_length=40)]
DataName = Annotated[
    str,
    Field(
        pattern=r"^(sp500|synthetic(:\d{1,9})?)$",
        description="sp500 or synthetic[:SEED]; files are loaded from the command line only",
    ),
]
Symbol = Annotated[str, Field(pattern=r"^[A-Za-z0-9.\-_^]{1,16}$")]


class Limits(BaseModel):
    model_config = _STRICT

    max_drawdown: float | None = Field(default=None, gt=0, le=1)
    max_turnover: float | None = Field(default=None, gt=0)
    time_budget_s: float | None = Field(default=None, gt=0, le=7 * 24 * 3600)
    max_tokens_total: int | None = Field(default=None, gt=0)


class ResearchRequest(BaseModel):
    """Start a research session (it runs in a worker process)."""

    model_config = _STRICT

    goal: str = Field(min_length=1, max_length=500)
    symbols: list[Symbol] | None = Field(default=None, max_length=200)
    budget: int = Field(default=20, ge=1, le=10_000)
    total_timesteps: int | None = Field(default=None, ge=64, le=10_000_000)
    mode: Literal["ppo_only", "cufolio_only", "unified"] = "cufolio_only"
    metric: str = Field(default="sharpe", pattern=r"^[a-z_]{1,32}$")
    limits: Limits = Limits()
    data: DataName = "sp500"
    noise_seeds: int = Field(default=3, ge=2, le=20)
    folds: int | None = Field(default=None, ge=1, le=20)
    proposer: Literal["auto", "tpe", "random", "llm"] = "auto"
    seed: int = Field(default=0, ge=0, le=1_000_000)


class TrainRequest(BaseModel):
    """Start a manual PPO run (it runs in a worker process)."""

    model_config = _STRICT

    symbols: list[Symbol] | None = Field(default=None, max_length=200)
    total_timesteps: int | None = Field(default=None, ge=64, le=10_000_000)
    knobs: dict[Annotated[str, Field(max_length=32)], float] = Field(
        default_factory=dict, max_length=16
    )
    data: DataName = "sp500"
    seed: int = Field(default=0, ge=0, le=1_000_000)
    metric: str = Field(default="sharpe", pattern=r"^[a-z_]{1,32}$")


JOB_ID = Field(
    description="the job running it: GET /api/jobs/{job_id} has its status, result or error"
)
WORKER_PID = Field(description="the worker process's id")


class Started(BaseModel):
    """A worker started for a session or a run: poll the session id for its progress."""

    model_config = _STRICT

    session_id: str | None = Field(
        description="the session it runs; null if the worker had not journaled it yet when "
        "answered (GET /api/jobs/{job_id} gives it once it has)"
    )
    pid: int | None = WORKER_PID
    job_id: int = JOB_ID


class JobStarted(BaseModel):
    """A worker started for a tick or a scheduler job: follow it with ``GET /api/jobs/{job_id}``."""

    model_config = _STRICT

    job: str
    pid: int | None = WORKER_PID
    job_id: int = JOB_ID


# A name a client may give: letters, digits, "_" and "-"; never a path.
NAME = r"^[A-Za-z0-9][A-Za-z0-9_\-]{0,63}$"


class DpoTrainRequest(BaseModel):
    """Train the server's DPO model on the labelled preference pairs (in a worker process).

    Clients name things, never paths: the model is the server's ``ALPHALOOP_DPO_MODEL``
    (``model_id``, if given, must be its folder name) and the result goes to
    ``<home>/dpo/<run>``."""

    model_config = _STRICT

    model_id: str | None = Field(
        default=None,
        pattern=NAME,
        description="the configured model's folder name, to make sure which model is trained",
    )
    run: str | None = Field(
        default=None,
        pattern=NAME,
        description="the new output folder's name under <home>/dpo (default: run-<UTC time>)",
    )
    lora: bool = Field(default=False, description="train a LoRA adapter instead of all weights")
    max_steps: int = Field(default=50, ge=1, le=100_000, description="optimizer steps")


class DpoStarted(BaseModel):
    """A DPO run started in a worker: follow it with ``GET /api/dpo/runs``."""

    model_config = _STRICT

    run: str
    model_id: str
    pid: int | None = WORKER_PID
    dpo_run_id: int | None = Field(
        description="its journal id; null if the worker had not journaled it yet when answered"
    )
    job_id: int = JOB_ID


class ChartContext(BaseModel):
    model_config = _STRICT

    session_id: SessionId | None = None
    trial_idx: int | None = Field(default=None, ge=0, le=MAX_ID)


class InterpretRequest(BaseModel):
    """Read a chart in 4-6 bullets. ``image_b64``: a PNG (or JPEG) of it, if the page has one;
    the vision model gets a PNG, the embedded reader reads the chart's own data."""

    model_config = _STRICT

    kind: str = Field(pattern=r"^[a-z_\-]{1,32}$")
    image_b64: str | None = Field(default=None, max_length=3_000_000)
    context: ChartContext = ChartContext()


class ChartReadOut(BaseModel):
    model_config = _STRICT

    kind: str
    model: str
    bullets: list[str]
    elapsed_s: float
    embedded: bool
    signature: str
    id: int | None = None


class Verdict(BaseModel):
    """A person's verdict on a portfolio manager decision."""

    model_config = _STRICT

    verdict: Literal["approve", "override", "reject"]
    weights: dict[Annotated[str, Field(max_length=16)], float] | None = Field(
        default=None, max_length=500
    )
    note: str | None = Field(default=None, max_length=2000)


class Page(BaseModel):
    """A list endpoint's answer: the items after ``after``, and the cursor for the next poll."""

    model_config = ConfigDict(frozen=True)

    items: list[Any]
    next_after: int
