"""What the LLM proposer sends: the ``propose_config_delta`` tool schema and the prompt.

The schema is generated from the knob models, so it *is* the edit space. The prompt is built
from a :class:`~alphaloop.meta_agent.proposers.base.ProposalContext` only, which carries
validation figures and nothing from the test window; the wording lives in
``alphaloop/prompts/propose*.md``.
"""

from __future__ import annotations

import json
import math
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, create_model

from alphaloop import prompts
from alphaloop.knobs import KNOBS, MODE_GROUPS, TrialConfig, knobs_for_mode
from alphaloop.llm import openai_tool
from alphaloop.meta_agent.proposers.base import ProposalContext, TrialView

__all__ = [
    "PROPOSE_TOOL",
    "messages_text",
    "one_line",
    "proposal_args_model",
    "proposal_instruction",
    "proposal_messages",
    "proposal_prompt",
    "propose_tool",
]

PROPOSE_TOOL = "propose_config_delta"
TOP_K = 8  # trials shown in the history table
RECENT = 5  # failures and clipped trials shown
SHOWN_METRICS = (
    ("sharpe", "{:.3f}"),
    ("annual_return", "{:.1%}"),
    ("max_drawdown", "{:.1%}"),
    ("annual_turnover", "{:.2f}"),
)


def proposal_args_model(mode: str) -> type[BaseModel]:
    """The ``propose_config_delta`` argument model for ``mode``, built from :class:`TrialConfig`.

    ``changes`` has one optional property per knob the mode uses, with the knob's type, bounds
    and meaning, so the schema *is* the edit space. It is only used to generate the schema:
    replies are parsed by :func:`parse_proposal`, which lets out-of-bounds values through for
    ``clip`` to clip and report.
    """
    fields: dict[str, Any] = {}
    for name in knobs_for_mode(mode):
        knob, info = KNOBS[name], TrialConfig.model_fields[name]
        fields[name] = (
            info.annotation,
            Field(
                default=None,
                ge=knob.low,
                le=knob.high,
                description=f"{knob.doc} ({knob.scale})",
                # "default": null on a number would confuse a grammar-constrained decoder.
                json_schema_extra=lambda schema: schema.pop("default", None),
            ),
        )
    changes = create_model(
        "KnobChanges",
        __config__=ConfigDict(frozen=True, extra="forbid", json_schema_extra={"minProperties": 1}),
        **fields,
    )
    return create_model(
        "ProposeConfigDelta",
        __config__=ConfigDict(frozen=True, extra="forbid"),
        changes=(changes, Field(description="knob -> new value; only the knobs to change")),
        rationale=(str, Field(min_length=1, description="why this edit should beat the best")),
    )


def propose_tool(mode: str) -> dict[str, Any]:
    """The OpenAI tool spec of ``propose_config_delta`` for ``mode``."""
    return openai_tool(
        PROPOSE_TOOL,
        "Propose the next config edit: a few knobs with new values, and why.",
        proposal_args_model(mode),
    )


def _num(value: float | None, spec: str = "{:.4g}") -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    return spec.format(value)


def one_line(text: str | None, limit: int = 160) -> str:
    flat = " ".join((text or "").split()).replace("|", "/")
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _knob_table(ctx: ProposalContext) -> str:
    best = ctx.best_config.model_dump()
    rows = []
    for name in knobs_for_mode(ctx.mode):
        k = KNOBS[name]
        rows.append(
            f"| {name} | {k.group} | {k.low:g} | {k.high:g} | {k.scale} | "
            f"{best[name]:g} | {k.doc} |"
        )
    return "\n".join(rows)


def _config_text(view: TrialView, mode: str) -> str:
    config = view.config.model_dump()
    return ", ".join(f"{k}={config[k]:g}" for k in knobs_for_mode(mode))


def _top_trials(ctx: ProposalContext) -> str:
    scored = [
        v
        for v in ctx.history
        if v.objective is not None
        and math.isfinite(v.objective)
        and v.status in ("keep", "discard")
    ]
    # Ascending on purpose: the best trial is the last thing the model reads before answering.
    top = sorted(scored, key=lambda v: (v.objective, -v.idx))[-TOP_K:]
    if not top:
        return "(no scored trial yet)"
    head = [
        "#",
        "kind",
        "status",
        "objective",
        *[m for m, _ in SHOWN_METRICS],
        "config",
        "rationale",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for v in top:
        status = "reference" if v.kind == "baseline" else v.status
        if v.violation:
            status += f"; breaks a limit: {v.violation}"
        cells = [
            str(v.idx),
            v.kind,
            one_line(status, 80),
            _num(v.objective),
            *[_num(v.metrics.get(m), spec) for m, spec in SHOWN_METRICS],
            _config_text(v, ctx.mode),
            one_line(v.rationale, 100),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _failures(ctx: ProposalContext) -> str:
    # Baselines are references, not failures: a limit they break shows in the table above.
    failed = [
        v
        for v in ctx.history
        if v.kind == "search" and (v.status in ("crash", "timeout", "invalid") or v.violation)
    ][-RECENT:]
    if not failed:
        return "(none)"
    lines = []
    for v in failed:
        why = v.violation or v.error or v.reason or "no reason recorded"
        edit = ", ".join(f"{k}={x:g}" for k, x in v.changes.items())
        lines.append(
            f"- trial {v.idx} {v.status}: {one_line(why, 200)}"
            + (f" (edit: {edit})" if edit else "")
        )
    return "\n".join(lines)


def _clips(ctx: ProposalContext) -> str:
    clipped = [v for v in ctx.history if v.clips][-RECENT:]
    if not clipped:
        return "(none)"
    lines = []
    for v in clipped:
        for c in v.clips:
            lines.append(
                f"- trial {v.idx}: {c.knob} proposed {c.proposed:g} -> applied "
                f"{c.applied:g} ({one_line(c.reason, 160)})"
            )
    return "\n".join(lines)


def _pending(ctx: ProposalContext) -> str:
    lines = [
        "",
        "## Trials running now (proposed, no result yet)",
        "",
        "Other workers are running these edits; propose a different one.",
        "",
    ]
    for v in ctx.pending:
        edit = ", ".join(f"{k}={x:g}" for k, x in v.changes.items()) or "(no change)"
        lines.append(f"- trial {v.idx}: {edit}")
    return "\n".join(lines) + "\n"


def proposal_prompt(ctx: ProposalContext, *, use_tools: bool = True) -> str:
    """The user message asking for the next edit.

    Built only from ``ctx``, which carries validation figures and nothing from the test window.
    With trials still running (parallel workers) their edits are listed after the prompt, so
    the model proposes something else; with none the prompt is the one-worker prompt.
    """
    text = _prompt_text(ctx, use_tools)
    text = text + _pending(ctx) if ctx.pending else text
    return text + _rejected(ctx) if ctx.rejected else text


def _rejected(ctx: ProposalContext) -> str:
    lines = [
        "",
        "## Already run: propose something else",
        "",
        "These edits of this step were not run: after clipping to the bounds they give a config "
        "this session has already run, and running it again would waste budget.",
        "",
        *[f"- {note}" for note in ctx.rejected],
    ]
    return "\n".join(lines) + "\n"


def proposal_messages(
    ctx: ProposalContext, system: str, *, use_tools: bool = True
) -> list[dict[str, Any]]:
    """The chat messages of a proposal request: ``system`` (the system prompt as sent, with
    its reasoning switch) and the user prompt built from ``ctx``."""
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": proposal_prompt(ctx, use_tools=use_tools)},
    ]


def messages_text(messages: list[dict[str, Any]]) -> str:
    """Chat messages as the JSON text journaled in ``trials.prompt``."""
    return json.dumps(messages, ensure_ascii=False)


def _prompt_text(ctx: ProposalContext, use_tools: bool) -> str:
    groups = MODE_GROUPS[ctx.mode]
    others = [g for g in ("env", "ppo", "cvar") if g not in groups]
    ignored = (
        f"Knobs of the other groups ({', '.join(others)}) are recorded but have no effect."
        if others
        else "Every knob group has an effect."
    )
    return prompts.render(
        "propose",
        goal=ctx.goal.strip(),
        objective=ctx.objective.describe(),
        noise_floor=_num(ctx.noise_floor),
        best_objective=_num(ctx.best_objective),
        mode=ctx.mode,
        groups=", ".join(groups),
        ignored=ignored,
        n_assets=ctx.n_assets,
        knob_table=_knob_table(ctx),
        top_trials=_top_trials(ctx),
        failures=_failures(ctx),
        clips=_clips(ctx),
        budget_left=ctx.budget_left,
        budget_total=ctx.budget_total,
        instruction=proposal_instruction(use_tools),
    )


def proposal_instruction(use_tools: bool) -> str:
    return prompts.load("propose_tool" if use_tools else "propose_json").strip()
