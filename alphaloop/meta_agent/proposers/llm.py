"""The LLM proposer: an OpenAI-compatible model reads the goal and the journal and proposes the
next :class:`~alphaloop.knobs.ConfigDelta` with a rationale.

The edit comes back through one forced tool call, ``propose_config_delta``, whose JSON schema is
generated from the knob models (bounds included). An endpoint that refuses or ignores tool calls
is asked for JSON in the text under ``response_format`` json_schema, and one that refuses or
ignores that for plain JSON, for the rest of the session (see :class:`LLMProposer`).

Replies are parsed leniently about syntax and strictly about meaning: values go through
:func:`~alphaloop.knobs.parse_number` (so "3e-4" is read and "5%" is refused with the reason),
unknown knob names are dropped when known ones remain, and out-of-bounds values pass through
untouched — the loop's ``clip`` clips them and the next prompt shows the clips. What is sent
(tool schema, prompt) lives in :mod:`~alphaloop.meta_agent.proposers.llm_prompt`.

A reply that cannot be used becomes one ``invalid`` trial row and is answered with the reason;
after ``max_attempts`` unusable replies, or when the endpoint fails through every retry, the
embedded proposer answers for that step and a ``ProposerFallback`` event says why. A session
never dies because the model or the endpoint misbehaves.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from alphaloop import prompts
from alphaloop.exceptions import InvalidDelta, LLMError, ReplyParseError, Unsupported
from alphaloop.journal import EventKind
from alphaloop.knobs import KNOBS, ConfigDelta, knobs_for_mode, parse_number
from alphaloop.llm import LLMCallRecord, LLMClient, LLMReply
from alphaloop.llm_json import parse_json_object
from alphaloop.meta_agent.proposers.base import ProposalContext, Proposer
from alphaloop.meta_agent.proposers.llm_prompt import (
    PROPOSE_TOOL,
    messages_text,
    one_line,
    proposal_args_model,
    proposal_instruction,
    proposal_messages,
    proposal_prompt,
    propose_tool,
)
from alphaloop.settings import Settings

__all__ = [
    "FALLBACK_EVENT",
    "MODES",
    "MODE_EVENT",
    "PROPOSE_TOOL",
    "TOOLS_UNSUPPORTED_EVENT",
    "LLMProposer",
    "UnusableReply",
    "learned_mode",
    "parse_proposal",
    "proposal_args_model",
    "proposal_prompt",
    "propose_tool",
]

EXCERPT = 500  # characters of an unusable reply kept in its invalid row
TOOLS_UNSUPPORTED_EVENT = EventKind.tools_unsupported
FALLBACK_EVENT = EventKind.proposer_fallback
MODE_EVENT = EventKind.llm_mode_changed
# How a mode change journals the capability the endpoint refused.
_CAUSES = {"tools": "ToolsUnsupported", "response_format": "ResponseFormatUnsupported"}
# How an edit is asked for, in the order they are tried: each asks less of the endpoint.
MODES = ("tools", "json_schema", "json_text")
NEXT_MODE = {"tools": "json_schema", "json_schema": "json_text", "json_text": "json_text"}

logger = logging.getLogger(__name__)


class UnusableReply(Exception):
    """A reply the loop cannot turn into a delta; ``reason`` is fed back to the model."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


# --- reading a reply -----------------------------------------------------------------------


def parse_proposal(payload: Any, ctx: ProposalContext) -> ConfigDelta:
    """Turns a decoded reply into a delta, or raises :class:`UnusableReply` saying why.

    Accepts ``{"changes": {...}, "rationale": "..."}`` and, as text-mode models often write it,
    the flat form ``{"KNOB": VALUE, ..., "rationale": "..."}``. Unknown knobs next to known ones
    are dropped (the rationale says so); a non-number anywhere refuses the whole reply, because
    the model should restate it rather than have part of its edit silently lost.
    """
    if not isinstance(payload, Mapping):
        raise UnusableReply(f"expected a JSON object, got {type(payload).__name__}")
    rationale = str(payload.get("rationale") or "").strip()
    raw = payload.get("changes")
    if raw is None:
        raw = {k: v for k, v in payload.items() if k not in ("rationale", "changes")}
    if not isinstance(raw, Mapping):
        raise UnusableReply("`changes` must be an object mapping knob names to numbers")
    mode_knobs = knobs_for_mode(ctx.mode)
    if not raw:
        raise UnusableReply("the edit is empty: `changes` names no knob")
    unknown = [str(k) for k in raw if k not in KNOBS]
    known = {k: v for k, v in raw.items() if k in KNOBS}
    if not known:
        raise UnusableReply(
            f"no known knob in `changes` (unknown: {', '.join(unknown)}); "
            f"the knobs of this mode are {', '.join(mode_knobs)}"
        )
    changes: dict[str, float] = {}
    problems: list[str] = []
    for key, value in known.items():
        try:
            changes[key] = parse_number(key, value)
        except InvalidDelta as err:
            problems.append(str(err))
    if problems:
        raise UnusableReply("; ".join(problems))
    if not any(k in mode_knobs for k in changes):
        raise UnusableReply(
            f"{', '.join(changes)} have no effect in mode {ctx.mode}; "
            f"change one of {', '.join(mode_knobs)}"
        )
    best = ctx.best_config.model_dump()
    if all(best[k] == v for k, v in changes.items()):
        raise UnusableReply("the edit changes nothing: every value equals the current best config")
    notes = []
    if unknown:
        notes.append(f"dropped unknown knobs: {', '.join(unknown)}")
    ignored = [k for k in changes if k not in mode_knobs]
    if ignored:
        notes.append(f"ignored in {ctx.mode}: {', '.join(ignored)}")
    if not rationale:
        notes.append("no rationale given")
    text = rationale + (f" [{'; '.join(notes)}]" if notes else "")
    return ConfigDelta(changes=changes, rationale=text.strip())


# --- the proposer --------------------------------------------------------------------------


class LLMProposer:
    """Proposes edits with an LLM, falling back to an embedded proposer step by step.

    How the edit is asked for (the *mode*) is learned from the endpoint and kept for the
    session: ``tools`` (a forced ``propose_config_delta`` call), then ``json_schema`` (JSON in
    the text under ``response_format``, which llama.cpp, vLLM and Ollama >= 0.5 enforce with a
    grammar) when forced calls come back as text ``text_fallback_after`` times in a row or the
    endpoint refuses tools, then ``json_text`` (plain JSON instructions) when the endpoint
    refuses ``response_format`` or ignores it as many times. Each switch is an
    ``LLMModeChanged`` event; every call journals its mode.

    Args:
        client: the endpoint client; its ``on_call`` should journal every attempt.
        journal: where invalid rows and events go (``trials.record_invalid``, ``logs.add_event``).
        session_id: the session the proposals are for.
        fallback: the embedded proposer used when the LLM cannot answer usefully.
        max_attempts: unusable replies tolerated per step before falling back.
        disable_after: consecutive steps lost to endpoint failures after which the fallback
            answers for the rest of this run (a down endpoint then costs no more retries).
        tokens_before: tokens already spent by this session (a resumed session's budget).
        use_tools: False starts in ``json_text`` mode.
        mode: the mode to start in (overrides ``use_tools``).
        text_fallback_after: replies in a row that ignore the mode before the next one is tried.
    """

    name = "llm"

    def __init__(
        self,
        client: LLMClient,
        journal: Any,
        session_id: str,
        *,
        fallback: Proposer,
        max_attempts: int = 3,
        disable_after: int = 3,
        tokens_before: int = 0,
        use_tools: bool = True,
        mode: str | None = None,
        text_fallback_after: int = 2,
    ) -> None:
        if max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, got {max_attempts}")
        if mode is not None and mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
        self.client, self.journal, self.session_id = client, journal, session_id
        self.fallback = fallback
        self.max_attempts, self.disable_after = max_attempts, disable_after
        self.tokens_before = tokens_before
        self.mode = mode or ("tools" if use_tools else "json_text")
        self.text_fallback_after = text_fallback_after
        self.last_name: str = self.name
        # The exact prompt of the last proposal (chat messages as JSON), None after a fallback.
        self.last_prompt: str | None = None
        self._endpoint_failures = 0
        self._ignored = 0  # replies in a row that ignored the mode they were asked in

    @property
    def use_tools(self) -> bool:
        return self.mode == "tools"

    @classmethod
    def from_settings(
        cls, settings: Settings, journal: Any, session_id: str, fallback: Proposer, **kwargs: Any
    ) -> LLMProposer:
        """A proposer on the configured endpoint whose every LLM call is journaled.

        Restores what a resumed session already knew: its token spend and the mode the endpoint
        was last found to honour.

        Raises:
            InvalidRequest: no endpoint base URL or model is set.
        """

        def on_call(record: LLMCallRecord) -> None:
            journal.logs.add_llm_call(**record.model_dump())

        client = LLMClient(settings, on_call=on_call)
        spent = sum(
            c.prompt_tokens + c.completion_tokens
            for c in journal.logs.llm_calls(session_id)
            if c.ok
        )
        kwargs.setdefault("tokens_before", spent)
        kwargs.setdefault("mode", learned_mode(journal, session_id))
        kwargs.setdefault("text_fallback_after", settings.llm_text_fallback_after)
        return cls(client, journal, session_id, fallback=fallback, **kwargs)

    def tokens_used(self) -> int:
        """Prompt plus completion tokens this session has spent on the LLM."""
        return self.tokens_before + self.client.total_tokens

    def propose(self, ctx: ProposalContext) -> ConfigDelta:
        self.last_prompt = None
        if self._endpoint_failures >= self.disable_after:
            return self._fall_back(
                ctx,
                f"LLM disabled for the rest of this run after "
                f"{self._endpoint_failures} failed steps",
                event=False,
            )
        messages = self._messages(ctx)
        reason, attempt, cut = "", 0, False
        while attempt < self.max_attempts:
            sent, asked = messages_text(messages), self.mode
            try:
                reply = self._ask(messages, ctx.mode)
            except Unsupported as err:
                # Not the model's fault: ask the next way, same attempt.
                self._switch(str(err), _CAUSES[err.capability])
                messages = self._messages(ctx)
                continue
            except LLMError as err:
                return self._endpoint_failed(ctx, err)
            self._endpoint_failures = 0
            attempt += 1
            self._note_ignored(reply)
            try:
                delta = parse_proposal(self._decode(reply), ctx)
            except UnusableReply as err:
                reason = err.reason
                if reply.finish_reason == "length":
                    if cut:  # cut twice: a terser ask will not fit either
                        break
                    cut, reason = True, f"cut at the max_tokens limit ({reason})"
                self._record_unusable(reply, attempt, reason, sent)
                if self.mode != asked:  # the reply made the proposer switch: ask anew
                    messages = self._messages(ctx)
                messages += self._feedback(reply, reason, terse=cut)
                continue
            self.last_name = self.name
            self.last_prompt = sent
            return delta
        return self._fall_back(ctx, f"{attempt} unusable LLM replies in a row; last: {reason}")

    def _messages(self, ctx: ProposalContext) -> list[dict[str, Any]]:
        system = self.client.system_prompt(prompts.load("propose_system"))
        return proposal_messages(ctx, system, use_tools=self.use_tools)

    def _endpoint_failed(self, ctx: ProposalContext, err: LLMError) -> ConfigDelta:
        self._endpoint_failures += 1
        why = f"LLM endpoint failed: {err}"
        if self._endpoint_failures >= self.disable_after:
            why += f"; {self._endpoint_failures} steps in a row, so the LLM is off for "
            why += "the rest of this run (resume the session to try it again)"
        return self._fall_back(ctx, why, error_type=type(err).__name__)

    def _record_unusable(self, reply: LLMReply, attempt: int, reason: str, sent: str) -> None:
        logger.info("unusable LLM reply (attempt %d): %s", attempt, reason)
        self.journal.trials.record_invalid(
            self.session_id,
            proposer=self.name,
            delta_raw=_excerpt(reply),
            error=f"unusable LLM reply (attempt {attempt}/{self.max_attempts}): {reason}",
            prompt=sent,
        )

    def _note_ignored(self, reply: LLMReply) -> None:
        """Counts replies that ignored how they were asked; switches mode after enough."""
        if self.mode == "tools":
            ignored = not reply.tool_calls
            what = "forced tool calls came back as plain text"
        elif self.mode == "json_schema":
            ignored = not _is_json(reply.content)
            what = "replies under response_format json_schema were not JSON"
        else:
            ignored, what = False, ""
        self._ignored = self._ignored + 1 if ignored else 0
        if ignored and self._ignored >= self.text_fallback_after:
            self._switch(f"{self._ignored} {what} in a row", "ignored")

    def _switch(self, why: str, cause: str) -> None:
        before = self.mode
        self.mode = NEXT_MODE[before]
        self._ignored = 0
        logger.warning("%s; the proposer asks with %s from now on", why, self.mode)
        if cause == "ToolsUnsupported":
            now = "JSON in the message text"
            self.journal.logs.add_event(
                self.session_id, TOOLS_UNSUPPORTED_EVENT, {"error": why, "now": now}
            )
        self.journal.logs.add_event(
            self.session_id,
            MODE_EVENT,
            {"mode": self.mode, "from": before, "reason": one_line(why, 300), "cause": cause},
        )

    def _ask(self, messages: list[dict[str, Any]], mode: str) -> LLMReply:
        kwargs: dict[str, Any] = {"mode": self.mode}
        if self.mode == "tools":
            kwargs["tools"] = [propose_tool(mode)]
            kwargs["tool_choice"] = {"type": "function", "function": {"name": PROPOSE_TOOL}}
        elif self.mode == "json_schema":
            schema = propose_tool(mode)["function"]["parameters"]
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": PROPOSE_TOOL, "schema": schema},
            }
        return self.client.chat(messages, purpose="propose", session_id=self.session_id, **kwargs)

    def _decode(self, reply: LLMReply) -> Any:
        """The reply's payload: the tool call's arguments, else a JSON object in the text."""
        calls = [c for c in reply.tool_calls if c.name == PROPOSE_TOOL]
        try:
            if calls:
                return calls[0].arguments()
            if reply.tool_calls:
                raise UnusableReply(
                    f"called unknown tool {reply.tool_calls[0].name!r}; call {PROPOSE_TOOL}"
                )
            # A model that answers in the text although a tool was forced (some Ollama and
            # llama.cpp builds do) is still understood when its text holds the object.
            return parse_json_object(reply.content)
        except ReplyParseError as err:
            where = "tool arguments" if calls else "reply text (and no tool call)"
            raise UnusableReply(f"{where}: {err.reason}") from None

    def _feedback(
        self, reply: LLMReply, reason: str, *, terse: bool = False
    ) -> list[dict[str, Any]]:
        """The assistant turn as sent plus the reason it was refused, in wire format."""
        instruction = proposal_instruction(self.use_tools)
        if terse:
            instruction = prompts.load("propose_terse").strip() + "\n" + instruction
        retry = prompts.render("propose_retry", reason=reason, instruction=instruction)
        if not reply.tool_calls:
            return [
                {"role": "assistant", "content": reply.content or "(empty reply)"},
                {"role": "user", "content": retry},
            ]
        turn: dict[str, Any] = {
            "role": "assistant",
            "content": reply.content or "",  # null makes llama-cpp-python answer 500
            "tool_calls": [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments_raw},
                }
                for c in reply.tool_calls
            ],
        }
        # Every tool call needs its answer, or strict servers refuse the next request.
        answers = [
            {
                "role": "tool",
                "tool_call_id": c.id,
                "name": c.name,  # templates without call ids match results by name
                "content": retry if i == 0 else "not processed",
            }
            for i, c in enumerate(reply.tool_calls)
        ]
        return [turn, *answers]

    def _fall_back(
        self, ctx: ProposalContext, why: str, *, error_type: str | None = None, event: bool = True
    ) -> ConfigDelta:
        logger.warning("the %s proposer answers for the LLM: %s", self.fallback.name, why)
        if event:
            self.journal.logs.add_event(
                self.session_id,
                FALLBACK_EVENT,
                {
                    "reason": why,
                    "error_type": error_type,
                    "fallback": self.fallback.name,
                    "budget_left": ctx.budget_left,
                },
            )
        delta = self.fallback.propose(ctx)
        self.last_name = f"{self.fallback.name} (fallback)"
        return ConfigDelta(
            changes=dict(delta.changes),
            rationale=f"{delta.rationale} [LLM fallback: {one_line(why, 200)}]",
        )


def learned_mode(journal: Any, session_id: str) -> str:
    """The mode a session last switched to (``tools`` if it never switched): a resumed session
    does not spend calls learning again what its endpoint cannot do."""
    changed = journal.logs.events(session_id, kind=MODE_EVENT)
    if changed:
        return str(changed[-1].payload.get("mode", "tools"))
    # Journals from before modes were learned only knew "no tools": plain JSON then.
    return "json_text" if journal.logs.events(session_id, kind=TOOLS_UNSUPPORTED_EVENT) else "tools"


def _is_json(text: str) -> bool:
    try:
        parse_json_object(text)
    except ReplyParseError:
        return False
    return True


def _excerpt(reply: LLMReply) -> str:
    if reply.tool_calls:
        text = "; ".join(f"{c.name}({c.arguments_raw})" for c in reply.tool_calls)
    else:
        text = reply.raw_content or reply.content or ""
    return text if len(text) <= EXCERPT else text[: EXCERPT - 3] + "..."
