"""parse_json_object on the replies real endpoints send when they cannot call tools."""

from __future__ import annotations

import math

import pytest

from alphaloop.exceptions import InvalidDelta, ReplyParseError
from alphaloop.knobs import ConfigDelta
from alphaloop.llm import ToolCall
from alphaloop.llm_json import parse_json_object, strip_think

EXPECTED = {"changes": {"learning_rate": 0.0001, "n_steps": 1024}, "rationale": "smaller steps"}

GOOD_REPLIES = {
    "bare": '{"changes": {"learning_rate": 0.0001, "n_steps": 1024}, "rationale": "smaller steps"}',
    "fenced json with prose": (
        "Based on the top trials, I suggest lowering the learning rate.\n\n"
        "```json\n"
        '{"changes": {"learning_rate": 0.0001, "n_steps": 1024}, "rationale": "smaller steps"}\n'
        "```\n\nThis should reduce variance across seeds."
    ),
    "fence without language": (
        "```\n"
        '{"changes": {"learning_rate": 0.0001, "n_steps": 1024}, "rationale": "smaller steps"}\n'
        "```"
    ),
    "fence with JSON upper case": (
        "```JSON\n"
        '{"changes": {"learning_rate": 0.0001, "n_steps": 1024}, "rationale": "smaller steps"}'
        "```"
    ),
    "prose around, no fence": (
        "Sure! Here is my proposal: "
        '{"changes": {"learning_rate": 0.0001, "n_steps": 1024}, "rationale": "smaller steps"}'
        " Let me know if you want another."
    ),
    "trailing commas": (
        '{"changes": {"learning_rate": 0.0001, "n_steps": 1024,},\n'
        ' "rationale": "smaller steps",\n}'
    ),
    "line and block comments": (
        "```json\n{\n"
        '  "changes": {\n'
        '    "learning_rate": 0.0001, // was 3e-4, too noisy\n'
        '    "n_steps": 1024 /* halve the rollout */\n'
        "  },\n"
        '  # why\n  "rationale": "smaller steps"\n'
        "}\n```"
    ),
    "python dict": (
        "{'changes': {'learning_rate': 0.0001, 'n_steps': 1024}, 'rationale': 'smaller steps'}"
    ),
    "unquoted keys": (
        '{changes: {learning_rate: 0.0001, n_steps: 1024}, rationale: "smaller steps"}'
    ),
    "think block with braces first": (
        '<think>Maybe {lookback: 30}? No. Let\'s try {"gamma": 0.95}... no, learning rate.'
        "</think>\n"
        '{"changes": {"learning_rate": 0.0001, "n_steps": 1024}, "rationale": "smaller steps"}'
    ),
    "leading unclosed think (prompt opened it)": (
        "the drawdown is high so I will go slower {not json}</think>\n\n"
        '{"changes": {"learning_rate": 0.0001, "n_steps": 1024}, "rationale": "smaller steps"}'
    ),
    "braces in prose before the object": (
        "I'll change {learning_rate} and {n_steps}, it's the best bet:\n"
        '{"changes": {"learning_rate": 0.0001, "n_steps": 1024}, "rationale": "smaller steps"}'
    ),
    "same object twice": (
        '```json\n{"changes": {"learning_rate": 0.0001, "n_steps": 1024}, '
        '"rationale": "smaller steps"}\n```\nAgain:\n```json\n'
        '{"changes": {"learning_rate": 0.0001, "n_steps": 1024}, "rationale": "smaller steps"}'
        "\n```"
    ),
    "unclosed fence": (
        "```json\n"
        '{"changes": {"learning_rate": 0.0001, "n_steps": 1024}, "rationale": "smaller steps"}\n'
    ),
    "crlf and indentation": (
        '{\r\n    "changes": {\r\n        "learning_rate": 0.0001,\r\n        "n_steps": 1024\r\n'
        '    },\r\n    "rationale": "smaller steps"\r\n}'
    ),
}


@pytest.mark.parametrize("reply", list(GOOD_REPLIES.values()), ids=list(GOOD_REPLIES))
def test_realistic_replies_parse_to_the_same_object(reply: str) -> None:
    assert parse_json_object(reply) == EXPECTED


def test_values_are_returned_as_written_and_judged_by_parse_number() -> None:
    reply = 'Proposal:\n```json\n{"changes": {"learning_rate": "3e-4", "ent_coef": "5%"}}\n```'
    parsed = parse_json_object(reply)
    assert parsed == {"changes": {"learning_rate": "3e-4", "ent_coef": "5%"}}
    assert ConfigDelta(changes={"learning_rate": "3e-4"}).changes == {"learning_rate": 3e-4}
    with pytest.raises(InvalidDelta, match="percentage"):
        ConfigDelta(changes=parsed["changes"])


def test_nan_is_returned_not_guessed_and_the_delta_refuses_it() -> None:
    parsed = parse_json_object('{"changes": {"gamma": NaN}}')
    assert math.isnan(parsed["changes"]["gamma"])
    with pytest.raises(InvalidDelta, match="finite"):
        ConfigDelta(changes=parsed["changes"])


def test_strings_keep_braces_comment_markers_quotes_and_newlines() -> None:
    reply = (
        '{"rationale": "it\'s {not} a // comment, see http://x.org/#a and \\"quotes\\"",\n'
        ' "note": "line one\nline two", "apostrophe": \'don\\\'t\'}'
    )
    parsed = parse_json_object(reply)
    assert parsed["rationale"] == 'it\'s {not} a // comment, see http://x.org/#a and "quotes"'
    assert parsed["note"] == "line one\nline two"
    assert parsed["apostrophe"] == "don't"


def test_python_literals_become_json_literals_outside_strings_only() -> None:
    parsed = parse_json_object("{'use_cvar': True, 'seed': None, 'why': 'True story'}")
    assert parsed == {"use_cvar": True, "seed": None, "why": "True story"}


def test_nested_object_is_returned_whole() -> None:
    reply = '{"a": {"b": {"c": [1, 2, {"d": 3}]}}, "e": []}'
    assert parse_json_object(reply) == {"a": {"b": {"c": [1, 2, {"d": 3}]}}, "e": []}


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("", "empty reply"),
        ("   \n ", "empty reply"),
        ("<think>I cannot decide {at all}</think>", "empty reply"),
        ("I would lower the learning rate to 1e-4.", "no JSON object"),
        ('{"changes": {"learning_rate": 0.0001, "n_steps": 10', "not closed"),
        ('```json\n{"changes": {"learning_rate": 0.0001,\n', "not closed"),
        ('{"changes": {"learning_rate": 0.0001 "n_steps": 1024}}', "invalid JSON"),
        ('{"a": 1}\nor maybe\n{"a": 2}', "2 different JSON objects"),
        ('<think>plan</think>{\'a\': 1} and ```json\n{"b": 2}\n``` and {"c": 3}', None),
    ],
)
def test_unusable_replies_raise_with_reason(reply: str, reason: str | None) -> None:
    if reason is None:  # a fenced object wins over prose objects outside fences
        assert parse_json_object(reply) == {"b": 2}
        return
    with pytest.raises(ReplyParseError, match=reason) as info:
        parse_json_object(reply)
    assert reason in info.value.reason


def test_error_excerpt_is_short_and_flattened() -> None:
    reply = "no json here\n" + "blah " * 100
    with pytest.raises(ReplyParseError) as info:
        parse_json_object(reply)
    assert len(info.value.excerpt) <= 160
    assert "\n" not in info.value.excerpt
    assert info.value.excerpt.startswith("no json here blah")


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("<think>a</think>answer", "answer"),
        ("<THINK>\nx\n</THINK>\n\nanswer\n", "answer"),
        ("<think>a</think>one <think>b</think>two", "one two"),
        ("half a thought</think>answer", "answer"),
        ("answer <think>cut off by max_tokens", "answer"),
        ("plain", "plain"),
        (None, ""),
    ],
)
def test_strip_think(raw: str | None, expected: str) -> None:
    assert strip_think(raw) == expected


def test_tool_call_arguments_strict_then_repaired() -> None:
    good = ToolCall(id="c1", name="f", arguments_raw='{"x": 1}')
    sloppy = ToolCall(id="c2", name="f", arguments_raw="```json\n{'x': 1,}\n```")
    assert good.arguments() == sloppy.arguments() == {"x": 1}
    with pytest.raises(ReplyParseError, match="not a JSON object"):
        ToolCall(id="c3", name="f", arguments_raw="[1, 2]").arguments()
