"""The research loop as a LangGraph ``StateGraph``.

baseline -> propose -> clip -> (route_after_clip) -> run_trial -> (route_after_trial)
         -> [confirm ->] record -> (route_next) -> propose ... -> finalize

``confirm`` re-runs a candidate that passed the keep rule's screen on fresh seeds before
``record`` gives its verdict (see :mod:`.keep_rule`).

``graph`` is compiled without a checkpointer (handy for tests and one-shot runs);
:func:`compile_graph` adds the SQLite checkpointer a resumable session uses.
"""

from __future__ import annotations

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.graph import END, START, StateGraph

from alphaloop.meta_agent import finalize, nodes
from alphaloop.meta_agent.state import CHECKPOINT_TYPES, SessionContext, SessionState


def build_graph() -> StateGraph:
    builder = StateGraph(SessionState, context_schema=SessionContext)
    builder.add_node("baseline", nodes.baseline)
    builder.add_node("propose", nodes.propose)
    builder.add_node("clip", nodes.clip_config)
    builder.add_node("run_trial", nodes.run_trial)
    builder.add_node("confirm", nodes.confirm)
    builder.add_node("record", nodes.record)
    builder.add_node("finalize", finalize.finalize)
    builder.add_edge(START, "baseline")
    builder.add_conditional_edges("baseline", nodes.route_next, ["propose", "finalize"])
    builder.add_edge("propose", "clip")
    builder.add_conditional_edges("clip", nodes.route_after_clip, ["run_trial", "finalize"])
    builder.add_conditional_edges("run_trial", nodes.route_after_trial, ["confirm", "record"])
    builder.add_edge("confirm", "record")
    builder.add_conditional_edges("record", nodes.route_next, ["propose", "finalize"])
    builder.add_edge("finalize", END)
    return builder


def compile_graph(checkpointer: BaseCheckpointSaver | None = None):
    """The graph, checkpointed by ``checkpointer`` when one is given (see
    :func:`checkpoint_serde` for the serializer it should use)."""
    return build_graph().compile(checkpointer=checkpointer)


def checkpoint_serde() -> JsonPlusSerializer:
    """The checkpoint serializer for the loop's state: it rebuilds the state's models (and
    only the types listed in :data:`~.state.CHECKPOINT_TYPES`) from a checkpoint."""
    return JsonPlusSerializer(allowed_msgpack_modules=list(CHECKPOINT_TYPES))


graph = compile_graph()
