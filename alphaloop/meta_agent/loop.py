"""The research loop, for one worker or many: read it in one sitting.

    baseline
    while a trial is in flight or may start:
        propose (start search trials while there is room)
        wait_for_oldest (the oldest trial in flight: its outcome)
        confirm (re-run it on fresh seeds, if it passed the keep rule's screen)
        record (its verdict)
    finalize

Each step (:mod:`.nodes`, :mod:`.finalize`) reads the journal, does one thing and writes its
result to the journal before it returns, and every step is idempotent: the journal is the
loop's checkpoint, and a resumed session runs this same loop from the top, each step skipping
what the journal says is done (see :mod:`.session`). With one worker the loop proposes, runs,
[confirms,] records, in turn; with several, ``propose`` keeps one trial per worker in flight
(and one more), and ``wait_for_oldest`` waits for the oldest: verdicts come in index order.

Why a plain loop and not a LangGraph graph: every decision here (room to propose, a stop rule,
a screen passed) is read from the journal and the trials in flight, which live objects hold;
a graph state would be a second copy of what the journal already holds, one that could
disagree with it on resume. Written as a loop, the order of the steps is the code.
"""

from __future__ import annotations

from alphaloop.meta_agent import finalize, nodes
from alphaloop.meta_agent.state import SessionContext


def run_loop(ctx: SessionContext) -> None:
    """Runs a session's loop from its baselines to its final report (see the module's doc)."""
    nodes.baseline(ctx)
    while True:
        if nodes.may_start(ctx):
            nodes.propose(ctx)  # a stop that came while the proposer thought starts nothing
        if not ctx.flight:
            break
        nodes.wait_for_oldest(ctx)
        if nodes.passed_screen(ctx):
            nodes.confirm(ctx)
        nodes.record(ctx)
    finalize.finalize(ctx)
