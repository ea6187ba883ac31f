"""A research goal that means what it says: the one function every front end (the command line,
the API and the page's form, the chat tool) runs on a research request before its session is
built.

:func:`understand_goal` reads the goal (:mod:`alphaloop.meta_agent.goal`: rules, and a language
model when one is configured and the rules left a phrase not understood), sets each setting the
goal names exactly as its flag would, unless the flag was given (the flag wins, and the
understanding says so), checks each value against the flag's own bounds, and returns the
request with them and an :class:`Understood` that the front end prints and the session
journals (a ``GoalRead`` event, read back by the review and the page).
"""

from __future__ import annotations

import logging
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model
from pydantic.fields import FieldInfo

from alphaloop.exceptions import InvalidRequest, LLMError
from alphaloop.meta_agent.goal import FLAGS, GoalReading, llm_reading, read_goal
from alphaloop.settings import Settings

logger = logging.getLogger(__name__)
R = TypeVar("R", bound=BaseModel)
GOAL_READ = "GoalRead"  # the event kind (alphaloop.journal.EventKind.goal_read)


class Understood(BaseModel):
    """What a session understood of its goal: the reading, the settings it applied, those a
    flag overrode, and the phrases named back as not understood."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    goal: str
    reading: GoalReading
    applied: dict[str, Any] = Field(default_factory=dict)
    overridden: dict[str, dict[str, Any]] = Field(default_factory=dict)
    note: str | None = None

    def lines(self) -> list[str]:
        """What the front ends print, one line each."""
        r = self.reading
        who = f"the model {r.model}" if r.reader == "llm" else "the goal"
        out = [f"understood from {who}: {_setting(k, v)} ({r.phrases.get(k, '')!s})"
               for k, v in self.applied.items()]  # fmt: skip
        out += [
            f"the goal says {_setting(k, v['goal'])}; {_flag(k, v['flag'])} wins"
            for k, v in self.overridden.items()
        ]
        out += [f"not understood: {p}" for p in r.not_understood]
        if self.note:
            out.append(self.note)
        if not out:
            out.append("understood from the goal: no metric nor limit (the defaults apply)")
        return out


def _setting(name: str, value: Any) -> str:
    if name == "metric":
        return f"maximise {value}"
    if name == "max_drawdown":
        return f"max drawdown <= {100 * value:.4g}%"
    if name == "max_turnover":
        return f"annual turnover <= {value:g}"
    return f"TEST Sharpe gate >= {value:g}"


def _flag(name: str, value: Any) -> str:
    """The flag that set ``name`` to ``value``, as typed: ``--max-drawdown 0.2``."""
    return f"{FLAGS[name]}{value:g}" if name == "min_sharpe" else f"{FLAGS[name]} {value}"


def _given(request: BaseModel, name: str) -> Any:
    """The value a flag gave ``name`` (None: left unset, so the goal may set it)."""
    if name == "min_sharpe":
        return (getattr(request, "gates", None) or {}).get("min_sharpe")
    value = getattr(request, name, None)
    return value if name in request.model_fields_set and value is not None else None


def _checked(request: BaseModel, updates: dict[str, Any], reading: GoalReading) -> None:
    """Refuses a value the goal set that its flag would refuse, naming the goal's words."""
    fields = type(request).model_fields
    names = [k for k in updates if k in fields and k != "gates"]
    model: Any = create_model(
        "GoalSettings",
        __config__=ConfigDict(extra="forbid"),
        **{k: (fields[k].annotation, FieldInfo.merge_field_infos(fields[k])) for k in names},
    )
    try:
        model.model_validate({k: updates[k] for k in names})
        if "gates" in updates:
            from alphaloop.validation.gates import Gates

            Gates(**updates["gates"])
    except ValidationError as err:
        e = err.errors()[0]
        name = str(e["loc"][-1]) if e["loc"] else "min_sharpe"
        said = reading.phrases.get(name, "the goal")
        raise InvalidRequest(
            f"the goal's {said!r} sets {name} {e.get('input')!r}, which {FLAGS[name].strip()} "
            f"refuses: {e['msg']}"
        ) from None


def _reading(goal: str, settings: Settings | None) -> tuple[GoalReading, str | None]:
    """The rules' reading, or the model's when the rules left a phrase not understood and an
    endpoint is configured (the model fills what the rules did not set)."""
    rules = read_goal(goal)
    if not rules.not_understood or settings is None or not settings.llm_configured:
        return rules, None
    try:
        model = llm_reading(goal, settings)
    except (LLMError, ValueError) as err:
        logger.warning("the model could not read the goal: %s", err)
        return (
            rules,
            f"the model could not read the goal ({str(err)[:160]}); the rules' reading holds",
        )
    merged = {**model.settings(), **rules.settings()}
    phrases = {**model.phrases, **rules.phrases}
    return model.model_copy(update={**merged, "phrases": phrases}), None


def understand_goal(request: R, settings: Settings | None = None) -> tuple[R, Understood]:
    """``request`` with the settings its goal names (each only where its flag was left unset),
    and what was understood.

    ``request`` is a research request or a model derived from it (an API body, a chat tool's
    arguments): a field counts as given when it is in its ``model_fields_set`` with a value
    (the command line sets only the options it was given); ``gates["min_sharpe"]`` is the
    Sharpe floor's flag.

    Raises:
        InvalidRequest: a value the goal sets is out of its flag's bounds (the message quotes
            the goal's words).
    """
    goal = str(getattr(request, "goal", "") or "")
    reading, note = _reading(goal, settings)
    applied: dict[str, Any] = {}
    overridden: dict[str, dict[str, Any]] = {}
    for name, value in reading.settings().items():
        flag = _given(request, name)
        if flag is None:
            applied[name] = value
        elif flag != value:
            overridden[name] = {"goal": value, "flag": flag}
    updates = {k: v for k, v in applied.items() if k != "min_sharpe"}
    if "min_sharpe" in applied:
        updates["gates"] = {
            **(getattr(request, "gates", None) or {}),
            "min_sharpe": applied["min_sharpe"],
        }
    _checked(request, updates, reading)
    understood = Understood(
        goal=goal, reading=reading, applied=applied, overridden=overridden, note=note
    )
    return request.model_copy(update=updates), understood


def read_understood(payload: dict[str, Any] | None) -> Understood | None:
    """A journaled ``GoalRead`` event's understanding (None for a session without one)."""
    if not payload:
        return None
    try:
        return Understood.model_validate(payload)
    except ValidationError:
        return None


def session_understood(settings: Settings, session_id: str) -> Understood | None:
    """What ``session_id`` understood of its goal, as journaled when it started (None for a
    session started before goals were read, or by a walk).

    Raises:
        NoJournal, NotFound: no such session.
    """
    from alphaloop.ops._journal import open_journal

    with open_journal(settings) as journal:
        journal.sessions.get(session_id)
        events = journal.logs.events(session_id, kind=GOAL_READ)
    return read_understood(events[-1].payload) if events else None


__all__ = ["GOAL_READ", "Understood", "read_understood", "session_understood", "understand_goal"]
