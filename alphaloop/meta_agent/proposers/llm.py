"""The LLM proposer: an OpenAI-compatible model reads the goal and the journal and proposes the
next :class:`~alphaloop.knobs.ConfigDelta` with a rationale.

The edit comes back through one forced tool call, ``propose_config_delta``, whose JSON schema is
generated from the knob models (bounds included). An endpoint without tool calling is asked for a
JSON object in the text instead, for the rest of the session. Replies are parsed leniently about
syntax and strictly about meaning: values go through :func:`~alphaloop.knobs.parse_number` (so
"3e-4" is read and "5%" is refused with the reason), unknown knob names are dropped when known
ones remain, and out-of-bounds values pass through untouched — the loop's ``clip`` clips them
and the next prompt shows the clips. What is sent (tool schema, prompt) lives in
:mod:`~alphaloop.meta_agent.proposers.llm_prompt`.

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
from alphaloop.exceptions import InvalidDelta, LLMError, ReplyParseError, ToolsUnsupported
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
    "PROPOSE_TOOL",
    "TOOLS_UNSUPPORTED_EVENT",
    "LLMProposer",
    "UnusableReply",
    "parse_proposal",
    "proposal_args_model",
    "proposal_prompt",
    "propose_tool",
]

EXCERPT = 500  # characters of an unusable reply kept in its invalid row
TOOLS_UNSUPPORTED_EVENT = EventKind.tools_unsupported
FALLBACK_EVENT = EventKind.proposer_fallback

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

    Args:
        client: the endpoint client; its ``on_call`` should journal every attempt.
        journal: where invalid rows and events go (``record_invalid_trial``, ``add_event``).
        session_id: the session the proposals are for.
        fallback: the embedded proposer used when the LLM cannot answer usefully.
        max_attempts: unusable replies tolerated per step before falling back.
        disable_after: consecutive steps lost to endpoint failures after which the fallback
            answers for the rest of this run (a down endpoint then costs no more retries).
        tokens_before: tokens already spent by this session (a resumed session's budget).
        use_tools: False starts in JSON-in-text mode.
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
    ) -> None:
        if max_attempts < 1:
            raise ValueError(f"max_attempts must be at least 1, got {max_attempts}")
        self.client, self.journal, self.session_id = client, journal, session_id
        self.fallback = fallback
        self.max_attempts, self.disable_after = max_attempts, disable_after
        self.tokens_before = tokens_before
        self.use_tools = use_tools
        self.last_name: str = self.name
        # The exact prompt of the last proposal (chat messages as JSON), None after a fallback.
        self.last_prompt: str | None = None
        self._endpoint_failures = 0

    @classmethod
    def from_settings(
        cls, settings: Settings, journal: Any, session_id: str, fallback: Proposer, **kwargs: Any
    ) -> LLMProposer:
        """A proposer on the configured endpoint whose every LLM call is journaled.

        Restores what a resumed session already knew: its token spend and whether the endpoint
        refused tool calling.

        Raises:
            LLMNotConfigured: no endpoint base URL or model is set.
        """

        def on_call(record: LLMCallRecord) -> None:
            journal.log_llm_call(**record.model_dump())

        client = LLMClient(settings, on_call=on_call)
        spent = sum(
            c.prompt_tokens + c.completion_tokens for c in journal.llm_calls(session_id) if c.ok
        )
        tools_refused = bool(journal.events(session_id, kind=TOOLS_UNSUPPORTED_EVENT))
        kwargs.setdefault("tokens_before", spent)
        kwargs.setdefault("use_tools", not tools_refused)
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
        system = self.client.system_prompt(prompts.load("propose_system"))
        messages = proposal_messages(ctx, system, use_tools=self.use_tools)
        reason = ""
        attempt = 0
        while attempt < self.max_attempts:
            sent = messages_text(messages)
            try:
                reply = self._ask(messages, ctx.mode)
            except ToolsUnsupported as err:
                # Not the model's fault: switch to JSON in the text and ask again, same attempt.
                logger.warning("%s; asking for JSON in the message text from now on", err)
                self.use_tools = False
                self.journal.add_event(
                    self.session_id,
                    TOOLS_UNSUPPORTED_EVENT,
                    {"error": str(err), "now": "JSON in the message text"},
                )
                messages[1] = {"role": "user", "content": proposal_prompt(ctx, use_tools=False)}
                continue
            except LLMError as err:
                self._endpoint_failures += 1
                why = f"LLM endpoint failed: {err}"
                if self._endpoint_failures >= self.disable_after:
                    why += f"; {self._endpoint_failures} steps in a row, so the LLM is off for "
                    why += "the rest of this run (resume the session to try it again)"
                return self._fall_back(ctx, why, error_type=type(err).__name__)
            self._endpoint_failures = 0
            attempt += 1
            try:
                delta = parse_proposal(self._decode(reply), ctx)
            except UnusableReply as err:
                reason = err.reason
                logger.info("unusable LLM reply (attempt %d): %s", attempt, reason)
                self.journal.record_invalid_trial(
                    self.session_id,
                    proposer=self.name,
                    delta_raw=_excerpt(reply),
                    error=f"unusable LLM reply (attempt {attempt}/{self.max_attempts}): {reason}",
                    prompt=sent,
                )
                messages += self._feedback(reply, reason)
                continue
            self.last_name = self.name
            self.last_prompt = sent
            return delta
        return self._fall_back(
            ctx, f"{self.max_attempts} unusable LLM replies in a row; last: {reason}"
        )

    def _ask(self, messages: list[dict[str, Any]], mode: str) -> LLMReply:
        kwargs: dict[str, Any] = {}
        if self.use_tools:
            kwargs["tools"] = [propose_tool(mode)]
            kwargs["tool_choice"] = {"type": "function", "function": {"name": PROPOSE_TOOL}}
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

    def _feedback(self, reply: LLMReply, reason: str) -> list[dict[str, Any]]:
        """The assistant turn as sent plus the reason it was refused, in wire format."""
        retry = prompts.render(
            "propose_retry", reason=reason, instruction=proposal_instruction(self.use_tools)
        )
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
            self.journal.add_event(
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


def _excerpt(reply: LLMReply) -> str:
    if reply.tool_calls:
        text = "; ".join(f"{c.name}({c.arguments_raw})" for c in reply.tool_calls)
    else:
        text = reply.raw_content or reply.content or ""
    return text if len(text) <= EXCERPT else text[: EXCERPT - 3] + "..."
