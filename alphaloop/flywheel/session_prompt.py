"""The proposal prompt of a research session's state, rendered from the journal.

A TPE proposal saw no prompt; to learn from it, the pair gets the prompt an LLM proposer would
have been sent at that point of the session: the same template, filled from the baseline and
search trials finished before the given trial index.
"""

from __future__ import annotations

from alphaloop.journal import Journal, SessionRecord, TrialKind, TrialStatus
from alphaloop.knobs import TrialConfig
from alphaloop.meta_agent.objective import Objective
from alphaloop.meta_agent.proposers import ProposalContext, TrialView
from alphaloop.meta_agent.proposers.llm_prompt import proposal_prompt
from alphaloop.meta_agent.recording import best_so_far
from alphaloop.metrics import Metrics


def render_prompt(journal: Journal, session: SessionRecord, before_idx: int) -> str:
    """The user prompt of the proposal made at trial ``before_idx`` of ``session``."""
    objective = Objective(**session.objective)
    rows = [
        t
        for t in journal.trials(session.id, series=False)
        if t.idx < before_idx
        and t.kind in (TrialKind.baseline, TrialKind.search)
        and t.status != TrialStatus.running
    ]
    clips: dict[int, list] = {}
    for c in journal.session_clips(session.id):
        clips.setdefault(c.trial_id, []).append(c.to_bounds_clip())
    history = []
    for t in rows:
        metrics = dict(t.metrics or {})
        violation = None
        if metrics and t.status in (TrialStatus.keep, TrialStatus.discard):
            violation = objective.violation(Metrics(**metrics))
        history.append(
            TrialView(
                idx=t.idx,
                kind=t.kind,
                status=t.status,
                config=TrialConfig(**t.config) if t.config else TrialConfig(),
                changes=dict((t.delta or {}).get("changes", {})),
                rationale=t.rationale or "",
                objective=t.objective,
                metrics=metrics,
                reason=t.reason,
                violation=violation,
                error=t.error,
                clips=clips.get(t.id, []),
            )
        )
    best, best_obj = best_so_far(rows)
    counted = sum(1 for t in rows if t.counted)
    symbols = ((session.settings or {}).get("data") or {}).get("symbols") or []
    ctx = ProposalContext(
        session_id=session.id,
        goal=session.goal,
        objective=objective,
        mode=session.mode,
        n_assets=max(len(symbols), 1),
        budget_total=session.budget,
        budget_left=max(session.budget - counted, 0),
        noise_floor=session.noise_floor or 0.0,
        best_config=TrialConfig(**best.config) if best else TrialConfig(),
        best_objective=best_obj,
        history=history,
        seed=session.seed,
    )
    return proposal_prompt(ctx)
