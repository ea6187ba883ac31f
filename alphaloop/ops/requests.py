"""Every request more than one front end accepts, declared once: its fields, bounds, defaults
and help text.

The command line's options (:mod:`alphaloop.cli._options`), the REST API's bodies and query
parameters (so its OpenAPI document), the chat tools' JSON schemas and the jobs' payloads
(:mod:`alphaloop.ops.jobs`) are generated from these models with :func:`derive`; none writes a
field of its own. A new option is a field here.

A session's requests are its spec's fields: :class:`ResearchRequest` takes, flat, the fields
of :class:`~alphaloop.spec.SessionSpec`, its objective and its trial budget that a client
names, each as the spec declares it (:func:`~alphaloop.spec.same`: bounds, default, help), so a
bound is written once; :class:`TrainRequest` takes a manual run's
(:class:`~alphaloop.spec.ManualRunSpec`) the same way. A trial budget's field a request leaves
out (None) takes the budget's default. Two fields take another shape: ``symbols`` names only
columns a client may send (a price file's spec takes any), and ``gates`` sets some thresholds
by name (the spec holds all of them).

A front end may leave fields out, never bound them differently: the fields in a model's
``LOCAL`` set name things on the machine the command runs on (a price file, worker processes,
a Ray cluster, a broker) and only the command line takes them. The chat tool starts smaller
sessions by *default* (its budget), guarded by the confirmation every acting tool asks for, not
by bounds of its own. ``tests/ops/test_requests.py`` probes each model's bounds through the
command line, the API and the chat tools and checks they accept and refuse the same values.

Models are schemas: a request's :meth:`Request.check` may read other schemas
(:mod:`alphaloop.spec`), never the layers that act on it. Building a session's spec from its
request and checking it whole (rules across fields, folds the data can hold) is
:func:`alphaloop.ops.research.session_spec`'s job (a manual run's,
:func:`alphaloop.ops.train.manual_spec`'s, a walk's, its epochs on the data included,
:func:`alphaloop.ops.walk.check_walk`'s); each front end calls it before anything is
journaled or a job queued.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    create_model,
    field_validator,
    model_validator,
)
from pydantic.fields import FieldInfo

from alphaloop.knobs import KNOB_NAMES
from alphaloop.spec import (
    DATA_HELP,
    DATA_NAME,
    DataSpec,
    Gates,
    ManualRunSpec,
    Objective,
    SessionSpec,
    TrialBudget,
    check_address,
    same,
)
from alphaloop.vocabulary import Advantage, Fill, GateName, Metric, Mode
from alphaloop.vocabulary import ProposerChoice as Proposer
from alphaloop.walk_spec import DEFAULT_RULE

STRICT = ConfigDict(frozen=True, extra="forbid")

# --- the vocabularies: enums in every schema (a session's are alphaloop.vocabulary's) -----------
Broker = Literal["paper", "alpaca"]
VerdictName = Literal["approve", "override", "reject"]
KnobName = Literal[KNOB_NAMES]  # type: ignore[valid-type]
# The charts alphaloop draws and the scheduler's jobs (as alphaloop.charts.CHART_KINDS and
# alphaloop.ops.schedule.JOBS name them: checked by a test).
ChartKind = Literal[
    "training_curve", "research_progress", "ratio_curve", "equity_curves", "weights", "validation"
]
ScheduleJobName = Literal["prefs_extract", "dpo_check", "retrain", "pm_tick"]

# --- names and ids: never paths -----------------------------------------------------------------
SESSION_ID = r"^s-\d{8}-\d{6}-[0-9a-f]{4}$"
SessionId = Annotated[
    str,
    Field(pattern=SESSION_ID, max_length=40, description="a session id, s-YYYYMMDD-HHMMSS-xxxx"),
]
BOOK = r"^[A-Za-z0-9_\-]{1,32}$"
BookName = Annotated[str, Field(pattern=BOOK, description="the book's name")]
MAIN_BOOK = "main"  # as alphaloop.settings.MAIN_BOOK (checked by a test)
Symbol = Annotated[str, Field(pattern=r"^[A-Za-z0-9.\-_^]{1,16}$")]
# The largest id a client may send: JavaScript's largest exact integer, far below SQLite's
# (2**63 - 1, where a larger one would overflow a query into a 500), and exact in any JSON
# reader.
MAX_ID = 2**53 - 1
FILES = "files"  # the validation context key that lets a price file be named (the CLI's)


def data_source(value: str | None, info: ValidationInfo) -> str | None:
    """A market by name; a path too where the caller's context allows files (the CLI)."""
    if value is None or re.match(DATA_NAME, value):
        return value
    if info.context and info.context.get(FILES):
        return value
    raise ValueError(
        f"unknown data {value[:80]!r}: expected sp500, synthetic[:SEED], null, tied, flat or "
        "planted[:SEED] (price files are named on the command line only)"
    )


def gates_field() -> Any:
    """The go/no-go gate thresholds a request may set, by name (research and validate alike)."""
    return Field(
        default={},  # in the schema: a generated client learns it
        description="go/no-go gate thresholds by name, null turns a gate off (the command line "
        "takes --gate NAME=VALUE or NAME=off)",
    )


def first_error(err: ValidationError) -> str:
    """The first of ``err``'s errors in one line, naming where it is (``max_pbo: ...``)."""
    e = err.errors()[0]
    where = ".".join(str(p) for p in e["loc"])
    message = str(e["msg"]).removeprefix("Value error, ")
    return f"{where}: {message}" if where else message


def declared_by(
    model: type[BaseModel], request: BaseModel, *, given: bool = False
) -> dict[str, Any]:
    """The values of ``request``'s fields that ``model`` declares (where a spec is built from
    a request: each field goes to the part of the spec that declares it); with ``given``, only
    those not left None (the model's own default applies to the others)."""
    values = {k: getattr(request, k) for k in type(request).model_fields if k in model.model_fields}
    return {k: v for k, v in values.items() if v is not None} if given else values


class Request(BaseModel):
    """A request: strict, frozen, and checked by :meth:`check` when validated."""

    model_config = STRICT
    # Fields only the command line takes (they name things on its machine).
    LOCAL: ClassVar[frozenset[str]] = frozenset()

    def check(self) -> None:
        """Raises ValueError when the request breaks a rule of a schema it names (never one of
        the layers that act on it: those check it when they build from it)."""

    @model_validator(mode="after")
    def _complete(self) -> Any:
        try:
            self.check()
        except ValidationError as err:  # one line naming the field, as for a field's own error
            raise ValueError(first_error(err)) from None
        return self


# Names a client may send, and as many as a page shows: a price file's spec takes any column.
SYMBOLS = Field(
    default=None,
    min_length=1,
    max_length=200,
    description="a subset of the data's columns (the command line takes them comma-separated)",
)


class ResearchRequest(Request):
    """Start a research session: a goal, a mode and a budget of search trials, scored on
    purged folds before a sealed TEST window."""

    LOCAL: ClassVar[frozenset[str]] = frozenset({"fill", "date_format", "workers", "ray_address"})

    goal: str = same(SessionSpec, "goal")
    mode: Mode = same(SessionSpec, "mode")
    budget: int = same(SessionSpec, "budget")
    proposer: Proposer = same(SessionSpec, "proposer")
    metric: Metric = same(Objective, "metric")
    max_drawdown: float | None = same(Objective, "max_drawdown")
    max_turnover: float | None = same(Objective, "max_turnover")
    time_budget_s: float | None = same(SessionSpec, "time_budget_s")
    max_tokens_total: int | None = same(SessionSpec, "max_tokens_total")
    data: str = same(DataSpec, "data")
    fill: Fill = same(DataSpec, "fill")
    date_format: str | None = same(DataSpec, "date_format")
    symbols: list[Symbol] | None = SYMBOLS
    seed: int = same(SessionSpec, "seed")
    noise_seeds: int = same(SessionSpec, "noise_seeds")
    folds: int | None = same(SessionSpec, "folds")
    gates: dict[GateName, float | None] = gates_field()
    total_timesteps: int | None = same(TrialBudget, "total_timesteps", default=None)
    truncate_drawdown: float | None = same(TrialBudget, "truncate_drawdown")
    stop_properly: float | None = same(TrialBudget, "stop_properly", default=None)
    advantage: Advantage = same(TrialBudget, "advantage")
    workers: int = same(SessionSpec, "workers")
    ray_address: str | None = same(SessionSpec, "ray_address")

    _data = field_validator("data")(data_source)


class ResumeRequest(Request):
    """Continue a session after a crash, a kill or a stop, from its next trial; where its
    trials run from now on (each left out: where they ran before, which the session keeps)."""

    LOCAL: ClassVar[frozenset[str]] = frozenset({"workers", "ray_address"})

    session_id: str = Field(min_length=1, max_length=40, description="the session to continue")
    workers: int | None = same(
        SessionSpec,
        "workers",
        default=None,
        description="trials in flight at once from now on (default: as before)",
    )
    ray_address: str | None = same(
        SessionSpec,
        "ray_address",
        description="run the rest on this Ray cluster (auto, HOST:PORT or ray://HOST:PORT), or "
        "here: local (default: where it ran)",
    )

    def check(self) -> None:
        check_address(self.ray_address)


class TrainRequest(Request):
    """One manual PPO run, outside any research session, journaled like a session."""

    LOCAL: ClassVar[frozenset[str]] = frozenset({"fill", "date_format", "n_envs"})

    symbols: list[Symbol] | None = SYMBOLS
    total_timesteps: int | None = same(TrialBudget, "total_timesteps", default=None)
    # The run's ``changes`` (ManualRunSpec), by knob name.
    knobs: dict[KnobName, Annotated[float, Field(allow_inf_nan=False)]] = Field(
        default={},  # in the schema: a generated client learns it
        max_length=len(KNOB_NAMES),
        description="knob -> value on the default config, clipped to its bounds (the command "
        "line takes --set knob=value)",
    )
    data: str = same(DataSpec, "data")
    fill: Fill = same(DataSpec, "fill")
    date_format: str | None = same(DataSpec, "date_format")
    seed: int = same(ManualRunSpec, "seed")
    n_envs: int | None = same(TrialBudget, "n_envs", default=None)
    truncate_drawdown: float | None = same(TrialBudget, "truncate_drawdown")
    stop_properly: float | None = same(TrialBudget, "stop_properly", default=None)
    advantage: Advantage = same(TrialBudget, "advantage")
    metric: Metric = same(ManualRunSpec, "metric")

    _data = field_validator("data")(data_source)


class TickRequest(Request):
    """Decide one day with the active policy, from prices up to the day before, and trade."""

    LOCAL: ClassVar[frozenset[str]] = frozenset({"broker"})

    date: dt.date | None = Field(
        default=None, description="the day decided, YYYY-MM-DD (default: after the data)"
    )
    data: str | None = same(
        DataSpec,
        "data",
        default=None,
        description="prices to use instead of the policy's own data: " + DATA_HELP,
    )
    broker: Broker | None = Field(
        default=None, description="paper or alpaca (default: the setting)"
    )
    book: BookName = MAIN_BOOK

    _data = field_validator("data")(data_source)


class HaltRequest(Request):
    """Halt a book: ticks journal the reason and send nothing until it is resumed."""

    why: str = Field(
        min_length=1,
        max_length=500,
        pattern=r"\S",
        description="the reason, journaled with every tick",
    )
    book: BookName = MAIN_BOOK


class ResumeBookRequest(Request):
    """Lift a book's manual halt (journaled with the reason)."""

    book: BookName = MAIN_BOOK
    why: str = Field(default="", max_length=500, description="the reason, journaled")


class ActivateRequest(Request):
    """Make a library entry the active policy; without a GO from its gates only with ``force``
    and a ``reason`` (journaled)."""

    force: bool = Field(
        default=False, description="activate without a GO from the gates (needs a reason)"
    )
    reason: str | None = Field(
        default=None,
        min_length=1,
        max_length=500,
        description="why the gates are overridden (journaled)",
    )


class ValidateRequest(Request):
    """The validation suite of a session: PBO, deflated Sharpe, walk-forward, stress and the
    go/no-go gates, journaled."""

    blocks: int = Field(
        default=16,
        ge=2,
        le=32,
        multiple_of=2,
        description="CSCV blocks S (even), 12,870 splits at 16",
    )
    windows: int = Field(default=4, ge=1, le=50, description="walk-forward windows per scheme")
    gates: dict[GateName, float | None] = gates_field()
    oos_start: dt.date | None = Field(
        default=None, description="walk-forward and stress from this date (unseen data)"
    )

    def check(self) -> None:
        self.gate_thresholds()

    def gate_thresholds(self) -> Gates:
        return Gates(**self.gates)


class VerdictRequest(Request):
    """A person's verdict on a portfolio-manager decision."""

    verdict: VerdictName = Field(description="approve, reject or override")
    weights: dict[Symbol, Annotated[float, Field(ge=0, le=1)]] | None = Field(
        default=None,
        max_length=500,
        description="the weights to hold instead, with override (rest cash; the command line "
        "takes AAPL=0.3,MSFT=0.2)",
    )
    note: str | None = Field(
        default=None, max_length=2000, description="why, in a few words (journaled)"
    )


class DpoTrainRequest(Request):
    """Train the proposing model with DPO on every labelled preference pair."""

    lora: bool = Field(default=False, description="train a LoRA adapter instead of all weights")
    max_steps: int = Field(default=50, ge=1, le=100_000, description="optimizer steps")
    max_length: int | None = Field(
        default=None,
        ge=16,
        le=1_000_000,
        description="tokens of the longest prompt + answer (default: ALPHALOOP_DPO_MAX_LENGTH, "
        "else the model's context length); longer prompts have their oldest history cut",
    )


def derive(
    model: type[Request],
    name: str,
    *,
    exclude: frozenset[str] | set[str] = frozenset(),
    defaults: dict[str, Any] | None = None,
    extra: dict[str, Any] | None = None,
    check: bool = True,
    doc: str | None = None,
) -> type[BaseModel]:
    """A model with ``model``'s fields (bounds and help as declared) less ``exclude``, with
    other ``defaults`` (never other bounds) and ``extra`` fields (``name: (type, default)``).

    With ``check`` the new model is a :class:`Request` whose validation runs ``model``'s full
    check on the fields it has (the left-out ones at their defaults); without it, a plain
    strict model (a job's payload, read back from the journal as it was written).
    """
    defaults = defaults or {}
    fields: dict[str, Any] = {}
    for field, info in model.model_fields.items():
        if field in exclude:
            continue
        copied = FieldInfo.merge_field_infos(info)
        if field in defaults:
            copied = FieldInfo.merge_field_infos(info, default=defaults[field])
        fields[field] = (info.annotation, copied)
    fields.update(extra or {})
    validators = {
        f"_{field}": field_validator(field)(data_source)
        for field in ("data",)
        if field in fields and field not in (extra or {})
    }
    if not check:
        return create_model(
            name,
            __config__=STRICT,
            __doc__=doc or model.__doc__,
            __validators__=validators,
            **fields,
        )

    def full_check(self: Any) -> None:
        # The data field was checked by this model's own validator, under its caller's context
        # (the command line takes a path, the API a market's name); the full check takes it
        # as it stands.
        model.model_validate(self.model_dump(exclude=set(extra or ())), context={FILES: True})

    derived = create_model(
        name,
        __base__=Request,
        __doc__=doc or model.__doc__,
        __validators__=validators,
        **fields,
    )
    derived.check = full_check  # type: ignore[method-assign]
    return derived


# --- the walk: the research loop replayed over history -----------------------------------------
Cadence = Literal["yearly", "quarterly", "monthly"]
PickRuleName = Literal["strict", "kept", "best"]
WALK_ID = r"^w-\d{8}-\d{6}-[0-9a-f]{4}$"
WalkId = Annotated[
    str, Field(pattern=WALK_ID, max_length=40, description="a walk id, w-YYYYMMDD-HHMMSS-xxxx")
]

WalkRequest = derive(
    ResearchRequest,
    "WalkRequest",
    exclude={"workers"},
    extra={
        "cadence": (
            Cadence,
            Field(
                default="yearly",
                description="how often the loop re-researches: an epoch on the first trading "
                "day of each year, quarter or month",
            ),
        ),
        "start": (
            dt.date | None,
            Field(
                default=None,
                description="the first epoch on or after this day, YYYY-MM-DD (default: the "
                "first day the session's folds fit before)",
            ),
        ),
        "end": (
            dt.date | None,
            Field(default=None, description="the last day traded (default: the data's last)"),
        ),
        "rule": (
            PickRuleName,
            Field(
                default=DEFAULT_RULE.value,
                description="what each epoch trades: strict (the session's pick), kept (the "
                "best kept config) or best (the best-estimated config); every walk reports "
                "all three",
            ),
        ),
        "workers": (
            int,
            Field(
                default=1,
                ge=1,
                le=256,
                description="epochs run side by side, each in a process of its own (with "
                "carry, trials of one epoch at once)",
            ),
        ),
        "fold_days": (
            int | None,
            Field(
                default=None,
                ge=21,
                le=10_000,
                description="trading days of each fold and of each epoch's VALIDATION (default: "
                "as a lone session's VALIDATION on the same data)",
            ),
        ),
        "carry": (
            int,
            Field(
                default=0,
                ge=0,
                le=10,
                description="each epoch first tries up to this many configs the epoch before "
                "kept (0: epochs independent, run side by side with workers)",
            ),
        ),
    },
    doc="Walk the research loop forward over history: at each epoch a session on the data cut "
    "there, its pick traded over the period after it beside the default and 1/N.",
)
WalkRequest.LOCAL = ResearchRequest.LOCAL  # type: ignore[attr-defined]


def shared_fields(model: type[BaseModel]) -> list[str]:
    """The fields every front end takes (all but the command line's local ones)."""
    local = getattr(model, "LOCAL", frozenset())
    return [f for f in model.model_fields if f not in local]


__all__ = [
    "MAX_ID",
    "SESSION_ID",
    "WALK_ID",
    "ActivateRequest",
    "DpoTrainRequest",
    "HaltRequest",
    "ResearchRequest",
    "ResumeBookRequest",
    "ResumeRequest",
    "TickRequest",
    "TrainRequest",
    "ValidateRequest",
    "VerdictRequest",
    "WalkRequest",
    "derive",
    "shared_fields",
]
