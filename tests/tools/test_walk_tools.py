"""The walk's chat tools: bad input answers as the API does (422, the same words) with nothing
journaled; starting a walk asks for the confirmation every acting tool asks for; and through
the scripted OpenAI-compatible server, a model starts a tiny walk and reads its verdict, the
journal's."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient

from alphaloop.chat import Chat
from alphaloop.journal import Journal
from alphaloop.server import create_app
from alphaloop.settings import Settings
from alphaloop.tools import TOOLS, ToolContext, call_tool, tool_specs
from tests.walk.helpers import TINY

try:  # see tests/conftest.py: ``tests`` is a package only under ``python -m pytest``
    from tests import fake_openai as fake
except ImportError:
    import fake_openai as fake  # type: ignore[no-redef]


def _call(settings: Settings, name: str, args: dict[str, Any], **ctx: Any) -> Any:
    return call_tool(TOOLS, name, json.dumps(args), ToolContext(settings, **ctx))


@pytest.mark.parametrize(
    "change",
    [{"start": "2010-06-01"}, {"start": "2015-06-01"}, {"cadence": "weekly"},
     {"data": "../prices.csv"}, {"workers": 2}],
)  # fmt: skip
def test_bad_input_answers_as_the_api_does(settings: Settings, change: dict[str, Any]) -> None:
    body = {**TINY, **change}
    asked: list[str] = []
    tool = _call(settings, "start_walk", body, confirm=lambda q: asked.append(q) or True)
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as client:
        api = client.post("/api/walks", json=body)
    assert not tool.ok and tool.data["status"] == api.status_code == 422, (tool.data, api.text)
    # the same words, after each front end's own "invalid ..." and where it points
    said = api.json()["detail"].split(": ", 2)[-1]
    assert tool.data["error"].endswith(said), (tool.data["error"], said)
    assert asked == []  # refused before anyone is asked
    assert not settings.journal_path.exists() or _no_walks(settings)


def _no_walks(settings: Settings) -> bool:
    with Journal(settings.journal_path) as j:
        return not j.walks.list() and not j.jobs.list()


def test_a_declined_walk_starts_nothing(settings: Settings) -> None:
    result = _call(settings, "start_walk", TINY, confirm=lambda q: False)
    assert not result.ok and result.data["status"] == 403 and "declined" in result.data["error"]
    assert not settings.journal_path.exists()
    empty = _call(settings, "walk_verdict", {})
    assert empty.ok and empty.data == {"walks": 0, "note": "no walk yet: start one with start_walk"}
    missing = _call(settings, "walk_verdict", {"walk_id": "w-20000101-000000-abcd"})
    assert not missing.ok and missing.data["status"] == 404


def test_the_walk_tools_are_accepted_by_a_strict_server() -> None:
    specs = [s for s in tool_specs() if s["function"]["name"] in ("start_walk", "walk_verdict")]
    assert len(specs) == 2
    fake.validate_chat_request(
        {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": specs}
    )
    start = specs[0]["function"]["parameters"]["properties"]
    assert {"cadence", "start", "rule", "carry"} <= set(start) and "workers" not in start


@pytest.mark.slow
def test_a_model_starts_a_walk_and_reads_its_verdict(
    fake_openai: fake.FakeOpenAI, llm_settings: Any
) -> None:
    settings = llm_settings()
    fake_openai.push(
        fake.tool_call("start_walk", TINY),
        fake.tool_call("walk_verdict", {}),
        fake.text("The walk found no edge it could detect."),
    )
    asked: list[str] = []
    progress: list[str] = []
    answer = Chat(settings, confirm=lambda q: asked.append(q) or True,
                  on_progress=progress.append).ask("Would this loop have beaten 1/N?")  # fmt: skip
    assert answer.text == "The walk found no edge it could detect."
    assert [t.name for t in answer.tool_calls] == ["start_walk", "walk_verdict"]
    assert all(t.ok for t in answer.tool_calls), [t.result for t in answer.tool_calls]
    assert len(asked) == 1 and asked[0].startswith("start_walk(")  # reading asks nothing
    started, read = (json.loads(t.result) for t in answer.tool_calls)
    with Journal(settings.journal_path) as j:
        [walk] = j.walks.list()
        epochs = j.walks.epochs(walk.id)
    report = walk.report
    assert started == read  # the verdict the walk ended with is the one read back
    assert (read["walk_id"], read["status"]) == (walk.id, "finished")
    assert (read["verdict"], read["go"], read["n_days"]) == (report.verdict, report.go,
                                                             report.n_days)  # fmt: skip
    own = next(r for r in read["records"] if r["rule"] == report.rule)
    assert own["minimum_detectable_edge"] == pytest.approx(report.record().detectable)
    assert [e["changed"] for e in read["epochs"]] == [e.changed for e in report.epochs]
    assert sum(p.startswith("epoch ") for p in progress) == len(epochs) == 4
    # the model read exactly those results, in tool messages answering its calls
    last = fake_openai.chat_requests[-1]
    shown = [m["content"] for m in last["messages"] if m["role"] == "tool"]
    assert shown == [t.result for t in answer.tool_calls]
