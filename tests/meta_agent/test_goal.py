"""A goal's words read as the flags they name: each phrase against the settings a person would
write as flags for it, the phrases named back, a flag winning over the text, a value out of
its flag's bounds refused, and a configured model reading what the rules left (the real
``openai`` client against the scripted server)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from alphaloop.exceptions import InvalidRequest
from alphaloop.meta_agent.goal import READ_GOAL_TOOL, read_goal
from alphaloop.ops.goal import understand_goal
from alphaloop.ops.requests import ResearchRequest
from alphaloop.settings import Settings

try:  # see conftest.py: ``tests`` is a package only under ``python -m pytest``
    from tests import fake_openai as fake
except ImportError:
    import fake_openai as fake  # type: ignore[no-redef]

# Each goal, and what its flags would be: the oracle is the flags a person would type.
READS = [
    ("maximise Sharpe, max drawdown under 15%", {"metric": "sharpe", "max_drawdown": 0.15}),
    ("maximise Sharpe, drawdown < 15%", {"metric": "sharpe", "max_drawdown": 0.15}),
    ("maximize sortino with turnover below 2 and Sharpe above 1",
     {"metric": "sortino", "max_turnover": 2.0, "min_sharpe": 1.0}),
    ("maximise returns, max drawdown of at most 0.2", {"metric": "return", "max_drawdown": 0.2}),
    ("maximise Sharpe with at most 12.5% drawdown", {"metric": "sharpe", "max_drawdown": 0.125}),
    ("maximise calmar; turnover under 150%", {"metric": "calmar", "max_turnover": 1.5}),
    ("Sharpe ≥ 0.8, drawdown ≤ 20%", {"min_sharpe": 0.8, "max_drawdown": 0.2}),
    ("maximise Sharpe", {"metric": "sharpe"}),
]  # fmt: skip
# Each goal with a phrase that looks like a limit, and a word the naming-back must quote.
NAMED_BACK = [
    ("maximise Sharpe, volatility under 10%", {"metric": "sharpe"}, "volatility under 10%"),
    ("maximise Sharpe, drawdown above 10%", {"metric": "sharpe"}, "drawdown above 10%"),
    ("maximise Sharpe, keep drawdown under 15", {"metric": "sharpe"}, "15%"),
    ("maximise Sharpe with low drawdown", {"metric": "sharpe"}, "low drawdown"),
    ("maximise risk-adjusted return", {}, "risk-adjusted"),
    ("minimise drawdown", {}, "minimise drawdown"),
]


@pytest.mark.parametrize(("goal", "flags"), READS)
def test_a_goal_reads_as_the_flags_it_names(goal: str, flags: dict[str, Any]) -> None:
    reading = read_goal(goal)
    assert reading.settings() == pytest.approx(flags)
    assert reading.not_understood == []
    assert set(reading.phrases) == set(flags)  # each setting says the words it came from


@pytest.mark.parametrize(("goal", "flags", "quoted"), NAMED_BACK)
def test_a_phrase_not_understood_is_named_back(
    goal: str, flags: dict[str, Any], quoted: str
) -> None:
    reading = read_goal(goal)
    assert reading.settings() == flags
    assert len(reading.not_understood) == 1 and quoted in reading.not_understood[0]


def _request(goal: str, **flags: Any) -> ResearchRequest:
    return ResearchRequest(goal=goal, data="synthetic", **flags)


def test_the_goal_sets_what_no_flag_set_and_a_flag_wins() -> None:
    goal = "maximise Sortino, max drawdown under 15%, turnover below 2, Sharpe above 1"
    request, understood = understand_goal(_request(goal))
    assert (request.metric, request.max_drawdown, request.max_turnover) == ("sortino", 0.15, 2.0)
    assert request.gates == {"min_sharpe": 1.0}
    flagged, understood = understand_goal(
        _request(goal, metric="sharpe", max_drawdown=0.2, gates={"min_sharpe": 0.5})
    )
    assert (flagged.metric, flagged.max_drawdown, flagged.max_turnover) == ("sharpe", 0.2, 2.0)
    assert flagged.gates == {"min_sharpe": 0.5}
    assert understood.applied == {"max_turnover": 2.0}
    assert understood.overridden == {
        "metric": {"goal": "sortino", "flag": "sharpe"},
        "max_drawdown": {"goal": 0.15, "flag": 0.2},
        "min_sharpe": {"goal": 1.0, "flag": 0.5},
    }
    lines = understood.lines()
    assert "the goal says max drawdown <= 15%; --max-drawdown 0.2 wins" in lines
    assert "the goal says TEST Sharpe gate >= 1; --gate min_sharpe=0.5 wins" in lines


def test_a_value_its_flag_would_refuse_is_refused_naming_the_goals_words() -> None:
    with pytest.raises(InvalidRequest, match="max drawdown under 150%"):
        understand_goal(_request("maximise Sharpe, max drawdown under 150%"))
    with pytest.raises(InvalidRequest, match="turnover below 5000"):
        understand_goal(_request("maximise Sharpe, turnover below 5000"))


def test_a_configured_model_reads_what_the_rules_left(
    fake_openai: fake.FakeOpenAI, llm_settings: Callable[..., Settings]
) -> None:
    """The rules cannot read "no worse than fifteen percent": the model is asked, its reading
    is applied as a flag would be (the rules' own settings kept), and bounded the same way."""
    settings = llm_settings()
    goal = "maximise Sharpe, drawdowns no worse than fifteen percent, no tobacco stocks"
    fake_openai.push(
        fake.tool_call(
            READ_GOAL_TOOL,
            {"metric": "sortino", "max_drawdown": 0.15, "not_understood": ["no tobacco stocks"]},
        )
    )
    request, understood = understand_goal(_request(goal), settings)
    assert (request.metric, request.max_drawdown) == ("sharpe", 0.15)  # the rules' metric holds
    assert understood.reading.reader == "llm" and understood.reading.model == settings.llm_model
    assert understood.reading.not_understood == ["no tobacco stocks"]
    assert any("the model" in line and "max drawdown <= 15%" in line for line in understood.lines())
    sent = fake_openai.chat_requests[-1]
    assert sent["messages"][-1]["content"] == goal
    assert sent["tools"][0]["function"]["name"] == READ_GOAL_TOOL
    # the model's value is bounded as the flag is
    fake_openai.push(fake.tool_call(READ_GOAL_TOOL, {"max_drawdown": 1.5}))
    with pytest.raises(InvalidRequest, match="max_drawdown"):
        understand_goal(_request(goal), settings)
    # a model that cannot answer leaves the rules' reading, saying so
    fake_openai.push(fake.error(400, "no such model"))
    request, understood = understand_goal(_request(goal), settings)
    assert request.max_drawdown is None and understood.reading.reader == "rules"
    assert understood.note is not None and "could not read the goal" in understood.note


def test_the_model_is_not_asked_when_the_rules_read_everything(
    fake_openai: fake.FakeOpenAI, llm_settings: Callable[..., Settings]
) -> None:
    request, understood = understand_goal(
        _request("maximise Sharpe, max drawdown under 15%"), llm_settings()
    )
    assert request.max_drawdown == 0.15 and understood.reading.reader == "rules"
    assert fake_openai.chat_requests == []
