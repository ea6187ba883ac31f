"""alphaloop against the OpenAI-compatible servers people run, each played by the scripted server's
strict mode (see ``tests/fake_openai.py``), through the real ``openai`` client.

Per server kind, the failure it caused and what is checked:

* llama-cpp-python (500 on a null ``content``): tool-call turns go back with ``content: ""``
  and tool results with their ``name``, in the proposer's feedback and in the chat.
* llama-server (object ``tool_choice`` downgraded to ``auto``; ``tools`` dropped for templates
  without tools; 500 on images without ``--mmproj``): forced calls answered as text switch the
  proposer to JSON under ``response_format`` json_schema, journaled per call; the image refusal
  is not retried and says what to change.
* vLLM (``tool_choice: "auto"`` refused without a tool-call parser): the chat's refusal is not
  retried and names the flags; the proposer's named tool choice is served.
* Ollama (``tool_choice`` ignored; json_schema ignored before 0.5 or refused; models without
  tools): the proposer ends up on JSON it can read, and a refused json_schema falls back to plain
  JSON instructions at once.

Every request carries ``max_tokens``; a reply cut at it is journaled with ``finish_reason`` and
asked again once, tersely. The slow tests run a 20-trial session against each strict mode.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import openai
import pytest
from typer.testing import CliRunner

from alphaloop.chat import Chat
from alphaloop.cli import app
from alphaloop.exceptions import LLMError, Unsupported
from alphaloop.journal import Journal
from alphaloop.knobs import TrialConfig
from alphaloop.llm import LLMClient, image_part
from alphaloop.meta_agent.proposers import ProposalContext, TPEProposer
from alphaloop.meta_agent.proposers.llm import PROPOSE_TOOL, LLMProposer
from alphaloop.settings import Settings, get_settings
from alphaloop.spec import Objective

try:  # see conftest.py: ``tests`` is a package only under ``python -m pytest``
    from tests import fake_openai as fake
except ImportError:
    import fake_openai as fake  # type: ignore[no-redef]

SettingsFactory = Callable[..., Settings]
SESSION = "s-servers"
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6300010000050001"
)


class RecordingJournal:
    """The journal's ``trials`` and ``logs`` methods the proposer calls, recording them (one
    recorder stands for both repositories)."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []
        self.invalid: list[dict[str, Any]] = []
        self.rows: list[tuple[str, dict[str, Any]]] = []
        self.trials = self.logs = self

    def add_llm_call(self, **kwargs: Any) -> None:
        self.calls.append(kwargs)

    def record_invalid(self, session_id: str, **kwargs: Any) -> None:
        self.invalid.append(kwargs)

    def add_event(self, session_id: str, kind: str, payload: dict[str, Any]) -> None:
        self.rows.append((str(kind), payload))

    def llm_calls(self, session_id: str | None = None) -> list[Any]:
        return []

    def events(self, session_id: str, kind: str | None = None) -> list[Any]:
        return [
            SimpleNamespace(kind=k, payload=p) for k, p in self.rows if kind is None or k == kind
        ]

    def event_kinds(self) -> list[str]:
        return [k for k, _ in self.rows]


def context() -> ProposalContext:
    return ProposalContext(
        session_id=SESSION,
        goal="maximise Sharpe",
        objective=Objective(metric="sharpe"),
        mode="cufolio_only",
        n_assets=6,
        budget_total=10,
        budget_left=7,
        noise_floor=0.01,
        best_config=TrialConfig(),
        best_objective=0.5,
        history=[],
        seed=0,
    )


def proposer(settings: Settings, journal: RecordingJournal, **kwargs: Any) -> LLMProposer:
    def on_call(record: Any) -> None:
        journal.logs.add_llm_call(**record.model_dump())

    client = LLMClient(settings, on_call=on_call)
    kwargs.setdefault("text_fallback_after", settings.llm_text_fallback_after)
    return LLMProposer(client, journal, SESSION, fallback=TPEProposer(), **kwargs)


class SmallModel:
    """A small instruct model behind a server: it calls the tool only when the served request
    forces it, answers JSON under a json_schema response_format or when the prompt asks for
    it, and prose otherwise. Every fourth proposal is an out-of-bounds cap that clips to the
    bound (and so often to a config already run) until it is told so."""

    def __init__(self) -> None:
        self.k = 0

    def edit(self, body: dict[str, Any]) -> dict[str, Any]:
        self.k += 1
        told = "Already run" in str(body["messages"][-1].get("content"))
        if self.k % 4 == 0 and not told:
            return {"max_position_pct": 0.9}
        return {"cvar_alpha": 0.86 + (self.k % 13) * 0.01, "n_scenarios": 3000 + 97 * self.k}

    def __call__(self, body: dict[str, Any]) -> fake.Step:
        payload = {"changes": self.edit(body), "rationale": f"step {self.k}"}
        choice = body.get("tool_choice", "auto")
        if body.get("tools") and (isinstance(choice, dict) or choice == "required"):
            return fake.tool_call(PROPOSE_TOOL, payload)
        if body.get("tools"):
            return fake.text("Lowering the CVaR level a little should help the Sharpe ratio.")
        if (body.get("response_format") or {}).get("type") == "json_schema":
            return fake.text(json.dumps(payload))
        if "exactly one JSON object" in json.dumps(body["messages"]):
            return fake.text("Sure! Here it is:\n```json\n" + json.dumps(payload) + "\n```")
        return fake.text("I would lower the CVaR level.")


@pytest.fixture
def server(request: pytest.FixtureRequest) -> Iterator[fake.FakeOpenAI]:
    kind, options = request.param
    with fake.FakeOpenAI(kind=kind, **options) as running:
        yield running


def served(kind: str, **options: Any) -> Any:
    return pytest.mark.parametrize("server", [(kind, options)], indirect=True)


# --- llama-cpp-python: a null content is a 500 ----------------------------------------------


@served("llama-cpp-python")
def test_llama_cpp_python_refuses_null_content_and_is_sent_an_empty_string(
    server: fake.FakeOpenAI, llm_settings: SettingsFactory
) -> None:
    raw = openai.OpenAI(base_url=server.base_url, api_key="x", max_retries=0)
    turn = {"role": "assistant", "content": None, "tool_calls": [tool_call_wire("c1")]}
    with pytest.raises(openai.InternalServerError, match="NoneType"):
        raw.chat.completions.create(
            model="fake-model",
            messages=[{"role": "user", "content": "hi"}, turn, tool_answer("c1")],
        )
    journal = RecordingJournal()
    server.push(
        fake.tool_call(PROPOSE_TOOL, {"changes": {"nope": 1}, "rationale": "r"}),
        fake.tool_call(PROPOSE_TOOL, {"changes": {"cvar_alpha": 0.9}, "rationale": "r"}),
    )
    p = proposer(llm_settings(llm_base_url=server.base_url), journal)
    assert p.propose(context()).changes == {"cvar_alpha": 0.9}
    feedback = server.chat_requests[-1]["messages"]
    assert feedback[-2]["role"] == "assistant" and feedback[-2]["content"] == ""
    assert feedback[-1]["name"] == PROPOSE_TOOL and feedback[-1]["tool_call_id"]
    assert [r.rejected for r in server.requests[1:]] == [None, None]
    assert journal.event_kinds() == []  # the feedback turn is no endpoint failure


@served("llama-cpp-python")
def test_chat_tool_round_trip_on_llama_cpp_python(
    server: fake.FakeOpenAI, llm_settings: SettingsFactory
) -> None:
    server.push(fake.tool_call("list_sessions", {}), fake.text("You have no sessions yet."))
    agent = Chat(llm_settings(llm_base_url=server.base_url))
    answer = agent.ask("what sessions do I have?")
    assert answer.text == "You have no sessions yet."
    second = server.chat_requests[1]["messages"]
    assert second[-2]["content"] == "" and second[-1]["name"] == "list_sessions"
    assert all(r.rejected is None for r in server.requests)
    assert all(r["max_tokens"] == get_default("llm_chat_max_tokens") for r in server.chat_requests)


def tool_call_wire(call_id: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": "f", "arguments": "{}"}}


def tool_answer(call_id: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "name": "f", "content": "{}"}


def get_default(field: str) -> Any:
    return Settings.model_fields[field].default


# --- llama-server: tool_choice downgraded, tools dropped, no images without --mmproj -------


@pytest.mark.parametrize(
    "server",
    [("llama-server", {}), ("llama-server", {"tool_template": False})],
    indirect=True,
    ids=["tool_choice-downgraded", "template-without-tools"],
)
def test_llama_server_text_answers_switch_to_json_schema(
    server: fake.FakeOpenAI, llm_settings: SettingsFactory
) -> None:
    server.responder = SmallModel()
    journal = RecordingJournal()
    p = proposer(llm_settings(llm_base_url=server.base_url), journal)
    first = p.propose(context())
    assert p.last_name == "llm" and first.changes
    assert [c["mode"] for c in journal.calls] == ["tools", "tools", "json_schema"]
    assert journal.event_kinds() == ["LLMModeChanged"]
    assert journal.rows[0][1]["mode"] == "json_schema"
    assert "plain text" in journal.rows[0][1]["reason"]
    assert len(journal.invalid) == 2  # the two prose replies, not counted against the budget
    # The grammar-enforced mode is kept: the next step asks for JSON straight away.
    p.propose(context())
    assert [c["mode"] for c in journal.calls][-1] == "json_schema" and len(journal.calls) == 4
    assert server.served_requests[-1]["response_format"]["type"] == "json_schema"


@served("llama-server", vision=False)
def test_llama_server_without_mmproj_refuses_images_once_and_says_what_to_change(
    server: fake.FakeOpenAI, llm_settings: SettingsFactory
) -> None:
    client = LLMClient(llm_settings(llm_base_url=server.base_url, llm_max_retries=4))
    message = {"role": "user", "content": [{"type": "text", "text": "read"}, image_part(PNG)]}
    with pytest.raises(Unsupported, match="ALPHALOOP_VLM_MODEL") as err:
        client.chat([message], purpose="chart_read")
    assert "embedded reader" in str(err.value) and err.value.status_code == 500
    assert len(server.requests) == 1  # a missing capability is not retried


# --- vLLM: "auto" needs a tool-call parser ------------------------------------------------


@served("vllm")
def test_vllm_without_parser_refuses_auto_once_and_serves_a_named_tool(
    server: fake.FakeOpenAI, llm_settings: SettingsFactory
) -> None:
    settings = llm_settings(llm_base_url=server.base_url, llm_max_retries=4)
    with pytest.raises(Unsupported, match="--enable-auto-tool-choice"):
        Chat(settings).ask("what sessions do I have?")
    assert len(server.requests) == 1
    server.responder = SmallModel()
    journal = RecordingJournal()
    p = proposer(settings, journal)
    assert p.propose(context()).changes and p.last_name == "llm"
    assert journal.calls[-1]["mode"] == "tools" and journal.rows == []


@served("vllm", tool_parser=True)
def test_vllm_with_a_parser_serves_the_chat(
    server: fake.FakeOpenAI, llm_settings: SettingsFactory
) -> None:
    server.push(fake.tool_call("list_sessions", {}), fake.text("None yet."))
    assert Chat(llm_settings(llm_base_url=server.base_url)).ask("sessions?").text == "None yet."


# --- Ollama: tool_choice ignored, json_schema ignored or refused, models without tools ------


@served("ollama")
def test_old_ollama_ignoring_tool_choice_and_json_schema_still_gets_read(
    server: fake.FakeOpenAI, llm_settings: SettingsFactory
) -> None:
    server.responder = SmallModel()
    journal = RecordingJournal()
    p = proposer(llm_settings(llm_base_url=server.base_url), journal)
    assert p.propose(context()).changes and p.last_name == "llm"
    assert journal.calls[-1]["mode"] == "json_schema"
    assert "response_format" in server.chat_requests[-1]
    assert "response_format" not in server.served_requests[-1]  # dropped, as before 0.5


@served("ollama", json_schema="rejected")
def test_refused_json_schema_falls_back_to_plain_json_at_once(
    server: fake.FakeOpenAI, llm_settings: SettingsFactory
) -> None:
    server.responder = SmallModel()
    journal = RecordingJournal()
    settings = llm_settings(llm_base_url=server.base_url, llm_max_retries=4)
    p = proposer(settings, journal, mode="json_schema")
    assert p.propose(context()).changes and p.last_name == "llm"
    assert [c["mode"] for c in journal.calls] == ["json_schema", "json_text"]
    assert [c["ok"] for c in journal.calls] == [False, True]  # refused once, not retried
    assert journal.rows[-1][1]["mode"] == "json_text"
    assert journal.rows[-1][1]["cause"] == "ResponseFormatUnsupported"


@served("ollama", tool_template=False)
def test_ollama_model_without_tools_switches_without_losing_the_step(
    server: fake.FakeOpenAI, llm_settings: SettingsFactory
) -> None:
    server.responder = SmallModel()
    journal = RecordingJournal()
    p = proposer(llm_settings(llm_base_url=server.base_url), journal)
    assert p.propose(context()).changes and p.last_name == "llm"
    assert journal.event_kinds() == ["ToolsUnsupported", "LLMModeChanged"]
    assert journal.invalid == []


def test_a_resumed_proposer_asks_the_way_its_session_learned(
    llm_settings: SettingsFactory,
) -> None:
    journal = RecordingJournal()
    journal.logs.add_event(SESSION, "ToolsUnsupported", {})
    settings = llm_settings()
    assert LLMProposer.from_settings(settings, journal, SESSION, TPEProposer()).mode == "json_text"
    journal.logs.add_event(SESSION, "LLMModeChanged", {"mode": "json_schema"})
    assert LLMProposer.from_settings(settings, journal, SESSION, TPEProposer()).mode == (
        "json_schema"
    )


# --- bounded generation and error classes -------------------------------------------------


def test_a_reply_cut_at_max_tokens_is_journaled_and_asked_again_tersely(
    fake_openai: fake.FakeOpenAI, llm_settings: SettingsFactory
) -> None:
    cut = fake.tool_call(PROPOSE_TOOL, '{"changes": {"cvar_alpha": 0.9}, "rationale": "Becau')
    fake_openai.push(
        dataclasses.replace(cut, finish_reason="length"),
        fake.tool_call(PROPOSE_TOOL, {"changes": {"cvar_alpha": 0.9}, "rationale": "r"}),
    )
    journal = RecordingJournal()
    p = proposer(llm_settings(llm_max_tokens=64), journal)
    assert p.propose(context()).changes == {"cvar_alpha": 0.9}
    assert [c["finish_reason"] for c in journal.calls] == ["length", "tool_calls"]
    assert "max_tokens limit" in journal.invalid[0]["error"]
    assert "cut off at the length limit" in fake_openai.chat_requests[1]["messages"][-1]["content"]
    assert [r["max_tokens"] for r in fake_openai.chat_requests] == [64, 64]


def test_cut_twice_falls_back_without_a_third_call(
    fake_openai: fake.FakeOpenAI, llm_settings: SettingsFactory
) -> None:
    cut = dataclasses.replace(fake.text('{"changes": {"cvar_al'), finish_reason="length")
    fake_openai.push(cut, cut)
    journal = RecordingJournal()
    p = proposer(llm_settings(), journal, mode="json_text")
    assert p.propose(context()) and p.last_name == "tpe (fallback)"
    assert len(fake_openai.chat_requests) == 2


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (400, LLMError),
        (401, LLMError),
        (403, LLMError),
        (404, LLMError),
        (422, LLMError),
    ],
)
def test_client_errors_are_not_retried(
    fake_openai: fake.FakeOpenAI, llm_settings: SettingsFactory, status: int, error: type
) -> None:
    fake_openai.push(fake.error(status, "no"))
    with pytest.raises(error):
        LLMClient(llm_settings(llm_max_retries=4)).chat([user("hi")], purpose="propose")
    assert len(fake_openai.chat_requests) == 1


def test_429_and_5xx_retry_honouring_retry_after(
    fake_openai: fake.FakeOpenAI, llm_settings: SettingsFactory
) -> None:
    fake_openai.push(
        fake.error(429, "slow down", headers={"Retry-After": "0.2"}),
        fake.error(503, "loading model"),
        fake.text("ok"),
    )
    client = LLMClient(llm_settings(llm_max_retries=4, llm_backoff_max_s=1.0))
    reply = client.chat([user("hi")], purpose="propose")
    assert reply.content == "ok" and reply.attempts == 3


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


# --- 20-trial sessions against each strict mode ----------------------------------------------

KINDS = [
    ("llama-cpp-python", {}),
    ("llama-server", {}),
    ("llama-server", {"tool_template": False}),
    ("vllm", {}),
    ("ollama", {}),
    ("ollama", {"json_schema": "rejected"}),
]


@pytest.fixture
def session_env(server: fake.FakeOpenAI, tmp_path: Path, clean_env: pytest.MonkeyPatch) -> Settings:
    for key, value in {
        "ALPHALOOP_HOME": str(tmp_path / "home"),
        "ALPHALOOP_LLM_BASE_URL": server.base_url,
        "ALPHALOOP_LLM_MODEL": server.models[0],
        "ALPHALOOP_LLM_MAX_RETRIES": "2",
        "ALPHALOOP_LLM_BACKOFF_BASE": "0.01",
        "ALPHALOOP_LLM_BACKOFF_MAX": "0.05",
    }.items():
        clean_env.setenv(key, value)
    return get_settings()


@pytest.mark.slow
@pytest.mark.parametrize(
    "server", KINDS, indirect=True, ids=[k + "".join(f"-{v}" for v in o) for k, o in KINDS]
)
def test_a_20_trial_session_keeps_the_llm_proposing_and_runs_no_config_twice(
    server: fake.FakeOpenAI, session_env: Settings
) -> None:
    server.responder = SmallModel()
    args = ["research", "maximise Sharpe", "--proposer", "llm", "--data", "synthetic"]
    args += ["--mode", "cufolio_only", "--noise-seeds", "2", "--budget", "20", "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    sid = json.loads(result.stdout)["session"]["id"]
    with Journal(session_env.journal_path) as j:
        search = [t for t in j.trials.of_session(sid, kind="search") if t.status != "invalid"]
        baselines = j.trials.of_session(sid, kind="baseline")
        calls = j.logs.llm_calls(sid)
        duplicates = j.logs.events(sid, kind="DuplicateProposal")
        fallbacks = j.logs.events(sid, kind="ProposerFallback")
        counted = j.trials.counted(sid)
    hashes = [t.config_hash for t in search]
    assert counted == 20 and len(search) == 20
    assert len(set(hashes)) == 20 and not set(hashes) & {b.config_hash for b in baselines}
    assert fallbacks == [] and search[-1].proposer in ("llm", "tpe (duplicate fill)")
    assert sum(t.proposer == "llm" for t in search) >= 15
    status = json.loads(CliRunner().invoke(app, ["status", sid, "--json"]).stdout)
    assert status["llm_mode"] == calls[-1].mode  # shown in status, kept for a resume:
    with Journal(session_env.journal_path) as j:
        resumed = LLMProposer.from_settings(session_env, j, sid, TPEProposer())
    assert resumed.mode == calls[-1].mode
    modes = {c.mode for c in calls}
    assert None not in modes and all(c.finish_reason for c in calls if c.ok)
    print(
        f"\n{server.kind} {sorted(modes)}: {len(search)} trials, {len(duplicates)} duplicates "
        f"refused, last mode {calls[-1].mode}, "
        f"fills {sum(t.proposer.endswith('(duplicate fill)') for t in search)}"
    )


@served("openai")
def test_a_proposer_stuck_on_one_config_is_told_then_tpe_fills_the_slot(
    server: fake.FakeOpenAI, session_env: Settings
) -> None:
    cap = {"changes": {"max_position_pct": 0.9}, "rationale": "bigger caps"}
    server.responder = lambda body: fake.tool_call(PROPOSE_TOOL, cap)
    args = ["research", "maximise Sharpe", "--proposer", "llm", "--data", "synthetic"]
    args += ["--mode", "cufolio_only", "--noise-seeds", "2", "--budget", "3", "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    sid = json.loads(result.stdout)["session"]["id"]
    with Journal(session_env.journal_path) as j:
        search = j.trials.of_session(sid, kind="search")
        duplicates = j.logs.events(sid, kind="DuplicateProposal")
        counted = j.trials.counted(sid)
    assert counted == 3 and len({t.config_hash for t in search}) == 3
    assert [t.proposer for t in search] == ["llm", *["tpe (duplicate fill)"] * 2]
    retries = get_default("llm_duplicate_retries")
    assert len(duplicates) == 2 * (retries + 1)  # per slot: the first ask and each retry
    first = search[0].idx
    assert {d.payload["clips_to"] for d in duplicates} <= {first, *[b.idx for b in search]}
    told = [r for r in server.chat_requests if "Already run" in r["messages"][1]["content"]]
    assert told and f"clips to trial {duplicates[0].payload['clips_to']}'s config" in json.dumps(
        told[0]
    )
