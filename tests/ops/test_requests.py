"""Each request more than one front end accepts is declared once (``alphaloop.ops.requests``):
the command line, the REST API and the chat tools accept and refuse the same values.

The values are probed from the one model's JSON schema (each bound, just inside and just
outside, each word of a vocabulary and one that is not), never from a list kept here. Each
front end is driven for real (the CLI through Typer, the API through the ASGI app, the tools
through ``call_tool``) with the operation behind it replaced by one that raises
:class:`Reached`: a value was accepted when the request got that far, refused when it was
answered before (exit 2, HTTP 422, a tool's 422) with nothing reached.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, get_args

import pytest
from fastapi.testclient import TestClient
from pydantic import BaseModel
from typer.testing import CliRunner

from alphaloop import ops
from alphaloop.cli import app as cli_app
from alphaloop.cli import research, train, validate
from alphaloop.cli._options import Cli
from alphaloop.exceptions import AlphaloopError, InvalidRequest
from alphaloop.knobs import KNOB_NAMES
from alphaloop.ops import dpo as ops_dpo
from alphaloop.ops import jobs as ops_jobs
from alphaloop.ops import pm as ops_pm
from alphaloop.ops import policies as ops_policies
from alphaloop.ops import prefs as ops_prefs
from alphaloop.ops import requests as rq
from alphaloop.ops.frontier import FrontierRequest
from alphaloop.server import create_app
from alphaloop.settings import Settings
from alphaloop.spec import Gates, ManualRunSpec, Objective, SessionSpec, TrialBudget
from alphaloop.tools import TOOLS
from alphaloop.tools.base import ToolContext, call_tool
from alphaloop.validation import GATE_NAMES

SID = "s-20260101-120000-ab12"


class Reached(AlphaloopError):
    """The operation behind a front end was called: the request was accepted (a failure by
    the error table, exit 1 and HTTP 500, told from any other by its name)."""


def _reached(*args: Any, **kwargs: Any) -> Any:
    raise Reached("reached")


@dataclass
class Shared:
    """How each front end is asked one request, and which operations it reaches."""

    model: type[rq.Request]
    cli: list[str]  # the command, before its options
    cli_fields: dict[str, Any]  # the command's Cli entries (flags, lists written as text)
    api: Callable[[TestClient, dict[str, Any]], Any]
    operations: list[tuple[Any, str]]
    base: dict[str, Any] = field(default_factory=dict)  # required fields, valid values
    cli_tail: list[str] = field(default_factory=list)  # the command's own arguments
    tool: str | None = None
    tool_extra: dict[str, Any] = field(default_factory=dict)
    # columns and a day of the data in ``base`` (a walk's check loads the data: it knows them)
    symbols: list[str] = field(default_factory=lambda: ["AAPL", "MSFT"])
    day: str = "2022-06-01"
    # What builds and checks the request whole (rules across fields, the data's folds), which
    # every front end runs before anything is journaled or queued.
    build: Callable[[Any], Any] | None = None
    skip: ClassVar[frozenset[str]] = frozenset({"data"})  # names: probed apart (files on the CLI)


def _post(path: str) -> Callable[[TestClient, dict[str, Any]], Any]:
    return lambda client, body: client.post(path, json=body)


def _query(path: str) -> Callable[[TestClient, dict[str, Any]], Any]:
    def call(client: TestClient, values: dict[str, Any]) -> Any:
        params = {
            k: json.dumps(v) if isinstance(v, bool) else v
            for k, v in values.items()
            if v is not None
        }
        return client.post(path, params=params, headers={"X-Alphaloop": "1"})

    return call


SHARED = {
    "research": Shared(
        rq.ResearchRequest,
        ["research", "start"],
        research.RESEARCH_CLI,
        _post("/api/research"),
        [(ops.research, "start_session"), (ops.research, "run_research"), (ops_jobs, "start_job")],
        base={"goal": "maximise Sharpe", "data": "synthetic"},
        tool="start_research",
        build=ops.research.session_spec,
    ),
    "walk": Shared(
        rq.WalkRequest,
        ["walk", "start"],
        research.RESEARCH_CLI,
        _post("/api/walks"),
        [(ops.walk, "start_walk"), (ops.walk, "run_walk"), (ops_jobs, "start_job")],
        base={"goal": "maximise Sharpe", "data": "synthetic"},
        tool="start_walk",
        build=ops.walk.check_walk,
        symbols=["A00", "A01"],
        day="2014-01-01",
    ),
    "train": Shared(
        rq.TrainRequest,
        ["train"],
        train.TRAIN_CLI,
        _post("/api/train"),
        [(ops.train, "train"), (ops_jobs, "start_job")],
        base={"data": "synthetic"},
        build=ops.train.manual_spec,
    ),
    "tick": Shared(
        rq.TickRequest,
        ["pm", "tick"],
        {},
        _post("/api/pm/tick"),
        [(ops_pm, "pm_tick"), (ops_pm, "check_tick_date")],
    ),
    "halt": Shared(
        rq.HaltRequest,
        ["pm", "halt"],
        {"why": Cli(flag="--why")},
        _post("/api/pm/halt"),
        [(ops_pm, "pm_halt")],
        base={"why": "earnings week"},
    ),
    "resume": Shared(
        rq.ResumeBookRequest,
        ["pm", "resume"],
        {"why": Cli(flag="--why")},
        _query("/api/pm/resume"),
        [(ops_pm, "pm_resume")],
    ),
    "activate": Shared(
        rq.ActivateRequest,
        ["policies", "activate"],
        {"force": Cli(flag="--force"), "reason": Cli(flag="--reason")},
        _query("/api/policies/1/activate"),
        [(ops_policies, "activate_policy")],
        cli_tail=["1"],
    ),
    "validate": Shared(
        rq.ValidateRequest,
        ["validate"],
        validate.VALIDATE_CLI,
        _post(f"/api/sessions/{SID}/validate"),
        [(ops.validate, "validate_session"), (ops.sessions, "get_session")],
        cli_tail=[SID],
        tool="validate_session",
        tool_extra={"session_id": SID},
    ),
    "verdict": Shared(
        rq.VerdictRequest,
        ["pm", "decide"],
        {"verdict": Cli(argument=True)},
        _post("/api/decisions/7/verdict"),
        [(ops_prefs, "decide")],
        base={"verdict": "approve"},
        cli_tail=["7"],
    ),
    "frontier": Shared(
        FrontierRequest,
        ["frontier"],
        {},
        lambda client, values: client.get("/api/frontier", params=values),
        [(ops.frontier, "trace_frontier")],
    ),
    "dpo": Shared(
        rq.DpoTrainRequest,
        ["dpo", "train"],
        {"lora": Cli(flag="--lora")},
        _post("/api/dpo/train"),
        [(ops_dpo, "train_dpo"), (ops_dpo, "served_model")],
    ),
}


def _step(value: float, integer: bool) -> float:
    return 1 if integer else max(1e-6, abs(value) * 1e-6)


def _numbers(prop: dict[str, Any]) -> Iterator[Any]:
    """Each bound of a number field, just inside and just outside."""
    integer = prop.get("type") == "integer"
    for key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        if key not in prop:
            continue
        bound = prop[key]
        step = _step(bound, integer)
        yield from (bound, bound - step, bound + step)  # on it, and either side
    if "multipleOf" in prop:
        yield prop.get("minimum", 0) + 1


def _schema(prop: dict[str, Any]) -> dict[str, Any]:
    """The non-null branch of an ``X | None`` field."""
    for option in prop.get("anyOf", []):
        if option.get("type") != "null":
            return {**option, **{k: v for k, v in prop.items() if k != "anyOf"}}
    return prop


def probes(
    model: type[rq.Request],
    name: str,
    symbols: tuple[str, ...] = ("AAPL", "MSFT"),
    day: str = "2022-06-01",
) -> Iterator[Any]:
    """Values to try for field ``name``, read from ``model``'s JSON schema (``symbols`` and
    ``day``: columns and a day the data has)."""
    schema = model.model_json_schema()
    prop = _schema(schema["properties"][name])
    kind = prop.get("type")
    if "enum" in prop:
        yield from prop["enum"]
        yield "nope"
    elif kind in ("integer", "number"):
        yield from _numbers(prop)
    elif kind == "boolean":
        yield from (True, False)
    elif kind == "string" and prop.get("format") == "date":
        yield from (day, "2022-13-45", "2022-02-30")
    elif kind == "string":
        low, high = prop.get("minLength", 0), prop.get("maxLength")
        if low:
            yield "" if low == 1 else "x" * (low - 1)
        if high:
            yield from ("x" * high, "x" * (high + 1))
        if "pattern" in prop:
            yield from ("../etc/passwd", "main")
    elif kind == "array":
        item = _schema(prop.get("items", {}))
        yield from (list(symbols), [], ["../x"] if "pattern" in item else ["a b"])
    elif kind == "object":
        keys = prop.get("propertyNames", {}).get("enum") or ["AAPL"]
        values = _schema(prop.get("additionalProperties", {}))
        for value in (0.3, *_numbers(values), None):
            yield {keys[0]: value}
        yield {"not_a_name!": 0.3}


def cases() -> Iterator[Any]:
    for request, shared in SHARED.items():
        for name in rq.shared_fields(shared.model):
            if name in shared.skip:
                continue
            for value in probes(shared.model, name, tuple(shared.symbols), shared.day):
                yield pytest.param(request, name, value, id=f"{request}-{name}-{value!r}"[:80])
        if "data" in shared.model.model_fields:
            for value in ("sp500", "synthetic:7", "planted:3", "yahoo"):
                yield pytest.param(request, "data", value, id=f"{request}-data-{value}")


def _cli_value(value: Any) -> str:
    if isinstance(value, dict):
        return ",".join(f"{k}={'off' if v is None else v}" for k, v in value.items())
    if isinstance(value, list):
        return ",".join(value)
    return str(value)


def cli_args(shared: Shared, values: dict[str, Any]) -> list[str]:
    """The command line asking for ``values``: flags of the generated options."""
    head, args = [*shared.cli], []
    positional = []
    for name, value in values.items():
        how = shared.cli_fields.get(name)
        if how is not None and how.argument:
            positional.append(str(value))
            continue
        flag = (how.flag if how and how.flag else None) or "--" + name.replace("_", "-")
        if isinstance(value, bool):
            if value:
                args.append(flag)
            continue
        if isinstance(value, dict) and how is not None and how.type == list[str]:
            for k, v in value.items():  # a repeated NAME=VALUE option
                args += [flag, f"{k}={'off' if v is None else v}"]
            continue
        if value is None:
            continue
        if name == "time_budget_s":  # the command line takes a duration with its unit
            value = f"{value:.6f}s"
        args += [flag, _cli_value(value)]
    return head + shared.cli_tail + positional + args


@pytest.fixture
def fronts(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Iterator[dict[str, Any]]:
    monkeypatch.setenv("ALPHALOOP_LLM_BASE_URL", "http://127.0.0.1:9/v1")  # never called
    monkeypatch.setenv("ALPHALOOP_LLM_MODEL", "m")
    monkeypatch.setenv("ALPHALOOP_DPO_MODEL", str(tmp_path / "model"))
    for shared in SHARED.values():
        for owner, name in shared.operations:
            monkeypatch.setattr(owner, name, _reached)
    from alphaloop.settings import get_settings

    live = get_settings()
    with TestClient(create_app(live), base_url="http://127.0.0.1") as client:
        yield {"settings": live, "client": client, "out": tmp_path / "out"}


def ask(shared: Shared, values: dict[str, Any], fronts: dict[str, Any]) -> dict[str, str]:
    """Each front end's answer to ``values``: ``accepted`` (it reached the operation) or
    ``refused`` (bad usage, nothing reached); anything else is returned as it came."""
    runner = CliRunner()
    args = cli_args(shared, values)
    if shared.cli[0] == "dpo":
        args += ["--model", str(fronts["out"]), "--out", str(fronts["out"])]
    result = runner.invoke(cli_app, args)
    seen = {"cli": _cli_answer(result)}
    answer = shared.api(fronts["client"], values)
    seen["api"] = _api_answer(answer)
    if shared.tool is not None:
        ctx = ToolContext(fronts["settings"], confirm=lambda _q: True)
        got = call_tool(TOOLS, shared.tool, {**shared.tool_extra, **values}, ctx)
        reached = got.data.get("status") == 500 and got.data.get("error") == "reached"
        refused = got.data.get("status") == 422
        seen["chat"] = "accepted" if reached else "refused" if refused else got.content
    return seen


def _api_answer(answer: Any) -> str:
    if answer.status_code == 500 and answer.json().get("error") == "Reached":
        return "accepted"
    return "refused" if answer.status_code == 422 else answer.text


def _cli_answer(result: Any) -> str:
    text = " ".join(result.output.split())
    if result.exit_code == 1 and "reached" in text:
        return "accepted"
    if result.exit_code == 2 and "Traceback" not in text:
        return "refused"
    return f"exit {result.exit_code}: {text[-300:]} {result.exception!r}"


@pytest.mark.parametrize(("request_name", "name", "value"), list(cases()))
def test_every_front_end_accepts_and_refuses_the_same_values(
    fronts: dict[str, Any], request_name: str, name: str, value: Any
) -> None:
    shared = SHARED[request_name]
    values = {**shared.base, name: value}
    seen = ask(shared, values, fronts)
    # The command line may also name a price file: data it reads as a path, the others refuse.
    assert seen.pop("cli") == verdict(shared, values, {rq.FILES: True}), seen
    assert set(seen.values()) == {verdict(shared, values)}, seen


def verdict(shared: Shared, values: dict[str, Any], context: Any = None) -> str:
    """What the one model, and the one operation that builds from it, say of ``values``."""
    try:
        request = shared.model.model_validate(values, context=context)
        if shared.build is not None:
            shared.build(request)
    except (ValueError, InvalidRequest):
        return "refused"
    return "accepted"


@pytest.mark.parametrize("request_name", ["research", "train", "walk"])
def test_fields_of_this_machine_are_the_command_line_s_alone(
    fronts: dict[str, Any], request_name: str
) -> None:
    """Files, worker processes and clusters are named on the command line only."""
    shared = SHARED[request_name]
    local = {"workers": 2, "ray_address": "auto", "fill": "ffill", "n_envs": 2}
    for name in shared.model.LOCAL:
        values = {**shared.base, name: local.get(name, "%d/%m/%Y")}
        seen = ask(shared, values, fronts)
        assert seen.pop("cli") == "accepted", (name, seen)
        assert set(seen.values()) == {"refused"}, (name, seen)


def test_the_probes_reach_both_sides_of_every_bound() -> None:
    """The probes are not all accepted nor all refused: each bounded field gets both."""
    for request, shared in SHARED.items():
        for name in rq.shared_fields(shared.model):
            if name in shared.skip:
                continue
            values = list(probes(shared.model, name, tuple(shared.symbols), shared.day))
            if all(isinstance(v, bool) for v in values):
                continue  # a flag: both values are fine
            outcomes = set()
            for value in values:
                try:
                    shared.model.model_validate({**shared.base, name: value})
                    outcomes.add("accepted")
                except ValueError:
                    outcomes.add("refused")
            assert outcomes == {"accepted", "refused"}, (request, name, outcomes)


def test_the_request_s_vocabularies_are_the_loop_s() -> None:
    from alphaloop.charts import CHART_KINDS
    from alphaloop.ops.schedule import JOBS
    from alphaloop.rl_engine.advantages import ADVANTAGE_ESTIMATORS
    from alphaloop.settings import MAIN_BOOK
    from alphaloop.vocabulary import METRICS, ProposerName

    assert get_args(rq.Proposer) == tuple(p.value for p in ProposerName)
    assert get_args(rq.Metric) == METRICS
    assert get_args(rq.Advantage) == ADVANTAGE_ESTIMATORS
    assert get_args(rq.ChartKind) == tuple(CHART_KINDS)
    assert set(get_args(rq.ScheduleJobName)) == set(JOBS)
    assert rq.MAIN_BOOK == MAIN_BOOK


# Request fields the spec holds in another shape: the names a client may send (a price file's
# spec takes any column), the gates set by name (the spec holds every threshold), the knob
# changes of a manual run by knob name (its ``changes``).
RESHAPED = {"symbols", "gates", "knobs"}


def _declared(prop: dict[str, Any]) -> dict[str, Any]:
    """A field's JSON schema as bounds, help and type: its non-null branch, less its default
    and title (the default is compared apart)."""
    return {k: v for k, v in _schema(prop).items() if k not in ("default", "title")}


@pytest.mark.parametrize(
    ("request_model", "parts"),
    [
        (rq.ResearchRequest, (SessionSpec, Objective, TrialBudget)),
        (rq.TrainRequest, (ManualRunSpec, TrialBudget)),
    ],
)
def test_the_request_s_fields_are_the_spec_s(
    request_model: type[rq.Request], parts: tuple[type[BaseModel], ...]
) -> None:
    """Each field of a session's request is declared by one part of its spec, with the same
    type, bounds and help, and its default (or none: the trial budget's own applies), so the
    request takes exactly what the session it builds takes."""
    asked = request_model.model_json_schema()["properties"]
    for name in request_model.model_fields:
        if name in RESHAPED:
            continue
        owners = [p for p in parts if name in p.model_fields]
        assert len(owners) == 1, (name, owners)  # one home: the spec is built by name
        owner = owners[0]
        declared = owner.model_json_schema()["properties"][name]
        assert _declared(asked[name]) == _declared(declared), name
        default = request_model.model_fields[name].default
        own = owner.model_fields[name].get_default(call_default_factory=True)
        assert default == own or (default is None and owner is TrialBudget), name


def test_the_request_s_reshaped_fields_fit_the_spec() -> None:
    assert set(get_args(rq.ResearchRequest.model_fields["gates"].annotation.__args__[0])) == set(
        Gates.model_fields
    )
    assert set(get_args(rq.TrainRequest.model_fields["knobs"].annotation.__args__[0])) == set(
        KNOB_NAMES
    )
    spec = ops.research.session_spec(rq.ResearchRequest(goal="g", symbols=["AAPL"]))
    assert spec.symbols == ["AAPL"]


def test_a_session_is_built_from_every_value_its_request_takes() -> None:
    """At every probe of every field the request accepts, the session spec it builds is
    accepted too, holding the value (a rule across fields aside: ``stop_properly`` is probed
    with truncation; a fold count past what the data holds is the data's refusal, a Ray
    address is read when the spec is built)."""
    model = rq.ResearchRequest
    for name in model.model_fields:
        for value in probes(model, name):
            values = {"goal": "g", name: value}
            if name in ("stop_properly",):
                values["truncate_drawdown"] = 0.5
            try:
                request = model.model_validate(values, context={rq.FILES: True})
            except ValueError:
                continue
            try:
                spec = ops.research.session_spec(request)
            except InvalidRequest as err:
                # Not a bound: the data (sp500 holds nine folds), or where trials run (an
                # address the spec reads when it is built, on the command line alone).
                said = str(err)
                too_many_folds = name == "folds" and "is too short for" in said
                no_address = name == "ray_address" and said.startswith("ray_address: expected")
                assert too_many_folds or no_address, (name, value, said)
                continue
            if name in spec.model_fields and name != "gates":
                assert getattr(spec, name) == value, name


def test_a_request_is_checked_whole_before_anything_runs(fronts: dict[str, Any]) -> None:
    """A rule across fields (here the trial budget's) refuses the request in each front end
    before the operation is reached: nothing journaled, no process started."""
    shared = SHARED["research"]
    values = {**shared.base, "stop_properly": 0.5}  # needs truncate_drawdown
    assert set(ask(shared, values, fronts).values()) == {"refused"}
    assert not fronts["settings"].journal_path.exists()


def test_the_chat_starts_smaller_sessions_by_default_only() -> None:
    from alphaloop.tools.run_tools import StartResearchArgs

    args = StartResearchArgs(goal="g")
    assert args.budget == 5 < rq.ResearchRequest(goal="g").budget
    assert (
        StartResearchArgs.model_json_schema()["properties"]["budget"]["maximum"]
        == (rq.ResearchRequest.model_json_schema()["properties"]["budget"]["maximum"])
    )


@pytest.mark.parametrize(
    ("asked", "said"),
    [
        # Synthetic data holds three folds: the most that fit is named.
        ({"folds": 4}, ("is too short for 4 folds", "ask for 3 folds or fewer")),
        # A gate that does not exist is named, and so is every gate there is.
        ({"gates": {"min_sortino": 1.0}}, ("min_sortino", *GATE_NAMES)),
    ],
)
def test_a_fold_count_or_gate_the_request_cannot_have_is_refused_alike_saying_why(
    fronts: dict[str, Any], asked: dict[str, Any], said: tuple[str, ...]
) -> None:
    shared = SHARED["research"]
    values = {**shared.base, **asked}
    cli = CliRunner().invoke(cli_app, cli_args(shared, values))
    text = " ".join(cli.output.split())
    assert cli.exit_code == 2 and all(s in text for s in said), cli.output
    api = shared.api(fronts["client"], values)
    assert api.status_code == 422 and all(s in api.text for s in said), api.text
    ctx = ToolContext(fronts["settings"], confirm=lambda _q: True)
    tool = call_tool(TOOLS, "start_research", values, ctx)
    told = json.dumps(tool.data)
    assert tool.data.get("status") == 422 and all(s in told for s in said), tool.data
