"""The research loop as a LangGraph ``StateGraph``, for one worker or many.

    baseline -> (route_next) -> propose -> (route_after_propose) -> run_trial
             -> (route_after_trial) -> [confirm ->] record -> (route_next) -> ... -> finalize

See :mod:`.nodes` for what each node does. The graph has no checkpointer: the journal is the
checkpoint of record, and a resumed session runs the graph from the start, every node skipping
what the journal says is done (see :mod:`.session`).
"""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph

from alphaloop.meta_agent import finalize, nodes
from alphaloop.meta_agent.state import SessionContext, SessionState


def build_graph() -> StateGraph:
    builder = StateGraph(SessionState, context_schema=SessionContext)
    builder.add_node("baseline", nodes.baseline)
    builder.add_node("propose", nodes.propose)
    builder.add_node("run_trial", nodes.run_trial)
    builder.add_node("confirm", nodes.confirm)
    builder.add_node("record", nodes.record)
    builder.add_node("finalize", finalize.finalize)
    builder.add_edge(START, "baseline")
    steps = ["propose", "run_trial", "finalize"]
    builder.add_conditional_edges("baseline", nodes.route_next, steps)
    builder.add_conditional_edges("propose", nodes.route_after_propose, ["run_trial", "finalize"])
    builder.add_conditional_edges("run_trial", nodes.route_after_trial, ["confirm", "record"])
    builder.add_edge("confirm", "record")
    builder.add_conditional_edges("record", nodes.route_next, steps)
    builder.add_edge("finalize", END)
    return builder


def compile_graph():
    """The research loop, compiled."""
    return build_graph().compile()


graph = compile_graph()
