"""What a goal's words ask for: the metric to maximise and the limits written in it, read as
the flags that set them would (``--metric``, ``--max-drawdown``, ``--max-turnover``,
``--gate min_sharpe=``).

"maximise Sharpe, max drawdown under 15%" reads as ``metric=sharpe, max_drawdown=0.15``:
the session then discards every trial deeper than 15% and judges its pick by a 15% drawdown
gate, as ``--max-drawdown 0.15`` would. A phrase that looks like a limit (a comparison and a
number, or a risk named with no number) but that these rules cannot map to one of those
settings is named back in ``not_understood``, never dropped: "volatility under 10%" is not a
limit alphaloop enforces, and the user is told so.

The rules are the reader that always runs; a language model may read a goal they left
something of (:func:`llm_reading`), and what it returns is bounded as a flag is.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from alphaloop.vocabulary import Metric as ObjectiveMetric

# What a goal may set, each as its flag names it (the gate's flag takes NAME=VALUE).
FLAGS = {
    "metric": "--metric",
    "max_drawdown": "--max-drawdown",
    "max_turnover": "--max-turnover",
    "min_sharpe": "--gate min_sharpe=",
}
_UPPER = (
    r"<=|=<|<|≤|under|below|beneath|less than|lower than|smaller than|at most|no more than|"
    r"not more than|no greater than|not above|not over|not exceeding|within|up to|capped at|"
    r"limited to|max(?:imum)?(?: of)?"
)
_LOWER = (
    r">=|=>|>|≥|above|over|greater than|more than|higher than|at least|no less than|"
    r"not less than|not below|not under|min(?:imum)?(?: of)?"
)
_NUMBER = r"(?P<num>[-+]?\d+(?:\.\d+)?|[-+]?\.\d+)\s*(?P<pct>%|percent\b|pct\b)?"
_LIMIT = re.compile(rf"(?P<cmp>{_UPPER}|{_LOWER})\s*(?:of\s+|than\s+)?{_NUMBER}")
_UPPER_RE = re.compile(rf"^(?:{_UPPER})$")
# "max drawdown 15%", "drawdown of 15%": a drawdown with a number and no comparison is a cap.
_BARE_DRAWDOWN = re.compile(rf"draw\s*-?\s*downs?\s*(?:of|at|=|:)?\s*{_NUMBER}")
_DRAWDOWN = re.compile(r"\b(draw\s*-?\s*downs?|mdd)\b")
_TURNOVER = re.compile(r"\bturnover\b")
_SHARPE = re.compile(r"\bsharpe\b")
# Words of risk a limit would name: mentioned without a limit understood, they are named back.
_RISKY = re.compile(
    r"\b(draw\s*-?\s*downs?|mdd|turnover|volatility|vol|risk|cvar|var|leverage|exposure|beta|"
    r"concentration|tracking error|sharpe|sortino|calmar|hit rate|win rate|profit factor)\b"
)
_METRICS: dict[str, ObjectiveMetric] = {
    "sharpe": "sharpe",
    "sortino": "sortino",
    "calmar": "calmar",
    "return": "return",
    "returns": "return",
    "annual return": "return",
    "total return": "return",
}
_MAXIMISE = re.compile(
    r"\b(?:maximi[sz]e|maximi[sz]ing|maximum|max|optimi[sz]e|highest|best|increase|improve)\s+"
    r"(?:the\s+)?(?:validation\s+|out-of-sample\s+|oos\s+)?(?P<what>[a-z][a-z\-]*(?:\s+[a-z]+)?)"
)
_MINIMISE = re.compile(
    r"\b(?:minimi[sz]e|minimi[sz]ing|reduce|lower)\s+(?:the\s+)?(?P<what>[a-z\- ]+)"
)
_CLAUSES = re.compile(r"[,;]|\band\b|\bbut\b|\bwhile\b|\bwith\b|\bkeeping\b|(?<!\d)\.(?!\d)")


class GoalReading(BaseModel):
    """What a goal's words set, by the flag each would take, and what they said that was not
    understood.

    Attributes:
        metric: the objective to maximise, when the goal names one alphaloop ranks by.
        max_drawdown: a cap on a trial's max drawdown (a fraction: 0.15 = 15%).
        max_turnover: a cap on a trial's annual one-way turnover.
        min_sharpe: the TEST gate's Sharpe floor (``--gate min_sharpe=``).
        phrases: each setting read, by name, with the words it was read from.
        not_understood: each phrase that looks like a limit but is none of these, with why.
        reader: ``rules`` (this module) or ``llm`` (a language model read it).
        model: the model that read it (``llm`` only).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    metric: ObjectiveMetric | None = None
    max_drawdown: float | None = None
    max_turnover: float | None = None
    min_sharpe: float | None = None
    phrases: dict[str, str] = Field(default_factory=dict)
    not_understood: list[str] = Field(default_factory=list)
    reader: Literal["rules", "llm"] = "rules"
    model: str | None = None

    def settings(self) -> dict[str, Any]:
        """The settings read, by name (only those the goal set)."""
        return {
            k: getattr(self, k) for k in ("metric", "max_drawdown", "max_turnover", "min_sharpe")
            if getattr(self, k) is not None
        }  # fmt: skip


def _value(num: str, pct: str | None) -> float:
    return float(num) / 100 if pct else float(num)


def _clauses(text: str) -> list[str]:
    return [c.strip() for c in _CLAUSES.split(text) if c and c.strip()]


# Why a comparison of a known quantity is not a limit alphaloop enforces.
_WRONG_WAY = {
    "drawdown": "a drawdown floor is not a limit alphaloop enforces (a cap is: max drawdown "
    "under 15%)",
    "turnover": "a turnover floor is not a limit alphaloop enforces (a cap is: turnover below 2)",
    "sharpe": "a Sharpe ceiling is not a limit alphaloop enforces (a floor is: Sharpe above 1)",
}
_UNKNOWN = (
    "not a limit alphaloop enforces (it enforces a max drawdown, a max turnover and a Sharpe "
    "floor on TEST)"
)


def _limit(clause: str, found: dict[str, Any], phrases: dict[str, str], odd: list[str]) -> bool:
    """Reads the limits of one clause into ``found``; returns whether it read one. A
    comparison it cannot map to a setting is put in ``odd``, with why."""
    read = False
    matches: list[re.Match[str]] = list(_LIMIT.finditer(clause))
    bare = _BARE_DRAWDOWN.search(clause)
    if not matches and bare and not bare.group("num").startswith("-"):
        matches = [bare]
    for m in matches:
        subject = clause[: m.start()] if m is not bare else clause[: m.end()]
        upper = m is bare or bool(_UPPER_RE.match(m.group("cmp")))
        num, pct = m.group("num"), m.group("pct")
        words = m.group(0) if m is bare else (subject[-40:] + m.group(0)).strip()
        after = clause[m.end() : m.end() + 30]
        if m is not bare and not _RISKY.search(subject) and _RISKY.search(after):
            subject = after  # "at most 15% drawdown": the quantity comes after its limit
            words = (m.group(0) + after).strip()
        if _DRAWDOWN.search(subject):
            if not upper:
                odd.append(f"{words!r}: {_WRONG_WAY['drawdown']}")
            elif not pct and float(num) > 1:
                odd.append(f"{words!r}: write the drawdown as a percentage or a fraction (15%)")
            else:
                read = _tightest(found, phrases, "max_drawdown", _value(num, pct), words, min)
        elif _TURNOVER.search(subject):
            if not upper:
                odd.append(f"{words!r}: {_WRONG_WAY['turnover']}")
            else:
                read = _tightest(found, phrases, "max_turnover", _value(num, pct), words, min)
        elif _SHARPE.search(subject) and not pct:
            if upper:
                odd.append(f"{words!r}: {_WRONG_WAY['sharpe']}")
            else:
                read = _tightest(found, phrases, "min_sharpe", float(num), words, max)
        else:
            odd.append(f"{words!r}: {_UNKNOWN}")
    return read


def _tightest(
    found: dict[str, Any], phrases: dict[str, str], name: str, value: float, words: str, pick: Any
) -> bool:
    """Sets ``name`` to ``value`` (the tighter of two, by ``pick``); returns True."""
    if name in found:
        value = pick(found[name], value)
        words = f"{phrases[name]}; {words}"
    found[name] = value
    phrases[name] = words
    return True


def _metric(text: str, found: dict[str, Any], phrases: dict[str, str], odd: list[str]) -> None:
    for m in _MAXIMISE.finditer(text):
        words = m.group("what").split()
        if words[0] in ("draw", "drawdown", "drawdowns", "turnover", "position", "weight"):
            continue  # "max drawdown under 15%" is a limit, not a metric to maximise
        two = " ".join(words[:2])
        said = m.group(0)[: m.start("what") - m.start()] + (two if two in _METRICS else words[0])
        metric = _METRICS.get(two) or _METRICS.get(words[0])
        if metric is None:
            odd.append(f"{m.group(0).strip()!r}: alphaloop maximises sharpe, sortino, calmar or "
                       "return")  # fmt: skip
        elif "metric" not in found:
            found["metric"], phrases["metric"] = metric, said.strip()
        return
    for m in _MINIMISE.finditer(text):
        odd.append(
            f"{m.group(0).strip()!r}: alphaloop maximises sharpe, sortino, calmar or return; "
            "a risk is capped with a limit (max drawdown under 15%, turnover below 2)"
        )


def read_goal(goal: str) -> GoalReading:
    """What ``goal`` sets, read by rules: the metric it maximises, the limits it writes, and
    each phrase that looks like a limit but is not understood."""
    text = goal.lower().replace("≤", "<=").replace("≥", ">=").replace("\u2212", "-")
    found: dict[str, Any] = {}
    phrases: dict[str, str] = {}
    odd: list[str] = []
    _metric(text, found, phrases, odd)
    for clause in _clauses(text):
        before = len(odd)
        read = _limit(clause, found, phrases, odd)
        said = [phrases.get("metric", "\0"), *odd[:before]]
        if _RISKY.search(clause) and not read and len(odd) == before:
            if not any(clause in w or w in clause for w in said):
                odd.append(f"{clause!r}: names no limit with a number (as in: max drawdown "
                           "under 15%)")  # fmt: skip
    return GoalReading(**found, phrases=phrases, not_understood=odd)


# --- a language model's reading ----------------------------------------------------------------


class ModelReading(BaseModel):
    """What a model is asked to return (the arguments of its ``read_goal`` call)."""

    model_config = ConfigDict(extra="forbid")

    metric: ObjectiveMetric | None = Field(
        default=None, description="the metric the goal maximises, if it names one"
    )
    max_drawdown: float | None = Field(
        default=None, description="the goal's cap on max drawdown, as a fraction (15% -> 0.15)"
    )
    max_turnover: float | None = Field(
        default=None, description="the goal's cap on annual one-way turnover (200% -> 2)"
    )
    min_sharpe: float | None = Field(
        default=None, description="the goal's floor on the out-of-sample Sharpe ratio"
    )
    not_understood: list[str] = Field(
        default_factory=list,
        description="each phrase of the goal that states a constraint none of the fields "
        "above can hold, quoted",
    )


READ_GOAL_TOOL = "read_goal"


def llm_reading(goal: str, settings: Any, client: Any = None) -> GoalReading:
    """``goal`` read by the configured model (``client``: an :class:`~alphaloop.llm.LLMClient`,
    by default one of ``settings``), through a ``read_goal`` tool call (JSON in the text when
    the endpoint has no tools).

    Raises:
        LLMError: the endpoint failed.
        ValueError: the answer is not a reading (not JSON, or fields of the wrong type).
    """
    from alphaloop import prompts
    from alphaloop.exceptions import Unsupported
    from alphaloop.llm import LLMClient
    from alphaloop.llm_json import openai_tool, parse_json_object

    client = client or LLMClient(settings)
    messages = [
        {"role": "system", "content": client.system_prompt(prompts.render("read_goal_system"))},
        {"role": "user", "content": goal},
    ]
    tool = openai_tool(READ_GOAL_TOOL, "What the research goal asks for", ModelReading)
    try:
        reply = client.chat(
            messages,
            tools=[tool],
            tool_choice={"type": "function", "function": {"name": READ_GOAL_TOOL}},
            purpose="read_goal",
            max_tokens=400,
        )
    except Unsupported:  # an endpoint without tool calls: JSON in the text
        reply = client.chat(messages, purpose="read_goal", max_tokens=400, mode="json_text")
    calls = [c for c in reply.tool_calls if c.name == READ_GOAL_TOOL]
    try:
        args = calls[0].arguments() if calls else parse_json_object(reply.content)
        answer = ModelReading.model_validate(args)
    except (ValueError, ValidationError) as err:
        raise ValueError(f"the model's reading of the goal is not one: {err}") from None
    read = answer.model_dump(exclude={"not_understood"}, exclude_none=True)
    return GoalReading(
        **read,
        phrases={k: "read by the model" for k in read},
        not_understood=[str(p)[:200] for p in answer.not_understood[:10]],
        reader="llm",
        model=getattr(client, "model", None),
    )


__all__ = ["FLAGS", "READ_GOAL_TOOL", "GoalReading", "ModelReading", "llm_reading", "read_goal"]
