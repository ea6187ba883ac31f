"""The proposal prompt of any journaled trial, rebuilt from the journal.

An LLM proposal journals the exact prompt the model saw in ``trials.prompt``. A TPE or random
proposal has none; :func:`render_proposal_prompt` renders the prompt an LLM *would* have seen
from the journal as it stood when that trial was proposed, so preference pairs can be built
from any two proposals made from one state, whoever made them.

"As it stood" is read from the rows' timestamps: a trial with a lower index that had finished
when trial ``before_idx`` started was in the history, one still running (a parallel worker's)
was pending. For a one-worker session with an LLM that answered at its first attempt, the
rendering equals the journaled prompt.
"""

from __future__ import annotations

from alphaloop import prompts
from alphaloop.journal import EventKind, Journal, TrialKind, TrialRecord, best_trial
from alphaloop.knobs import BoundsClip, TrialConfig
from alphaloop.llm import nemotron_system_prompt
from alphaloop.meta_agent.proposers import ProposalContext
from alphaloop.meta_agent.proposers.llm_prompt import messages_text, proposal_messages
from alphaloop.meta_agent.recording import LOOP_KINDS, is_outcome, trial_view

__all__ = ["proposal_context_before", "render_proposal_prompt"]


def proposal_context_before(journal: Journal, session_id: str, before_idx: int) -> ProposalContext:
    """What a proposer saw (or would have seen) when trial ``before_idx`` was proposed.

    Raises:
        NotFound: no such session.
    """
    session = journal.sessions.get(session_id)
    rows = [t for t in journal.trials.of_session(session_id, series=False) if t.idx < before_idx]
    this = journal.trials.of_session(session_id, series=False)
    started = next((t.started_at for t in this if t.idx == before_idx), None)

    def done_then(t: TrialRecord) -> bool:
        return started is None or (t.finished_at is not None and t.finished_at <= started)

    history = [t for t in rows if t.kind in LOOP_KINDS and is_outcome(t) and done_then(t)]
    pending = [t for t in rows if t.kind == TrialKind.search and not done_then(t)]
    clips: dict[int, list[BoundsClip]] = {}
    for c in journal.logs.session_clips(session_id):
        clips.setdefault(c.trial_id, []).append(c.to_bounds_clip())
    objective = session.objective
    best = best_trial(history)
    counted = sum(1 for t in history if t.counted)
    return ProposalContext(
        session_id=session_id,
        goal=session.goal,
        objective=objective,
        mode=session.mode,
        n_assets=len(session.settings.data.symbols) if session.settings.data else 0,
        budget_total=session.budget,
        budget_left=max(session.budget - counted, 0),
        noise_floor=session.noise_floor or 0.0,
        best_config=TrialConfig(**best.trial.config) if best else TrialConfig(),
        best_objective=best.score if best else None,
        history=[trial_view(objective, t, clips.get(t.id, [])) for t in history],
        seed=session.seed,
        pending=[trial_view(objective, t, clips.get(t.id, [])) for t in pending],
    )


def render_proposal_prompt(
    journal: Journal, session_id: str, before_idx: int, *, reasoning: bool = False
) -> str:
    """The proposal prompt (chat messages as JSON text, as journaled in ``trials.prompt``) an
    LLM would have been sent for trial ``before_idx`` of ``session_id``, rendered from the
    journal state before that trial.

    Args:
        journal: an open journal.
        session_id: the session.
        before_idx: the index of the trial whose proposal prompt is wanted (an index past the
            last trial gives the prompt of the next proposal).
        reasoning: Nemotron's reasoning switch, as ``settings.llm_reasoning`` set it.

    Raises:
        NotFound: no such session.
    """
    ctx = proposal_context_before(journal, session_id, before_idx)
    this = [t for t in journal.trials.of_session(session_id, series=False) if t.idx == before_idx]
    refused = [
        e
        for e in journal.logs.events(session_id, kind=EventKind.tools_unsupported)
        if not this or e.created_at <= this[0].started_at
    ]
    system = nemotron_system_prompt(prompts.load("propose_system"), reasoning)
    return messages_text(proposal_messages(ctx, system, use_tools=not refused))
