"""Spans of the research loop: one ``research.iteration`` per search trial, with children
``research.propose``, ``research.trial`` and ``research.record`` (see :mod:`alphaloop.telemetry`).

An iteration does not fit one ``with`` block: in the graph it spans several nodes, and with
parallel workers several iterations are open at once in one driver thread. :class:`OpenSpan`
holds a span open across calls in a context of its own (a :class:`contextvars.Context` copy),
so its children nest under it whatever is current in the caller, and the caller's context is
never left pointing at it.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from alphaloop import telemetry

T = TypeVar("T")

ITERATION = "research.iteration"
PROPOSE = "research.propose"
TRIAL = "research.trial"
RECORD = "research.record"


class OpenSpan:
    """A span started now and ended by :meth:`end`, with :meth:`run` to work inside it."""

    def __init__(
        self,
        name: str,
        attributes: Mapping[str, Any] | None = None,
        *,
        parent: OpenSpan | None = None,
    ) -> None:
        base = parent._context if parent is not None else contextvars.copy_context()
        # A copy of the parent's context, so sibling spans do not see each other as parents.
        self._context = base.run(contextvars.copy_context)
        self._manager = telemetry.span(name, attributes)
        self.span = self._context.run(self._manager.__enter__)
        self._open = True

    def run(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Calls ``fn`` with this span current: spans it opens are this one's children."""
        return self._context.run(fn, *args, **kwargs)

    def child(self, name: str, attributes: Mapping[str, Any] | None = None) -> OpenSpan:
        return OpenSpan(name, attributes, parent=self)

    def set(self, attributes: Mapping[str, Any]) -> None:
        telemetry.set_attributes(self.span, attributes)

    def end(self, err: BaseException | None = None) -> None:
        """Ends the span (once; later calls do nothing), recording ``err`` when given."""
        if not self._open:
            return
        self._open = False
        exc = (type(err), err, err.__traceback__) if err is not None else (None, None, None)
        try:
            self._context.run(self._manager.__exit__, *exc)
        except BaseException as raised:  # the manager re-raises what it recorded
            if raised is not err:
                raise


def iteration_attributes(session_id: str, mode: str, idx: int | None = None) -> dict[str, Any]:
    return {"alphaloop.session.id": session_id, "alphaloop.trial.idx": idx, "alphaloop.mode": mode}
