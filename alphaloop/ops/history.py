"""A session's optimisation history for a chart of any length: its search trials' objectives
as columns with the incumbent line, sampled down to what a chart's pixels can show.

Read from one covering index (schema 11) and kept per session state: the answer is cached
under the session's trial count and count of running trials, which every start and every
finish changes (a finished trial's status and objective are never written again).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict

from alphaloop.journal import Journal, TrialFilter
from alphaloop.ops._journal import open_journal
from alphaloop.settings import Settings

# A chart is at most a couple of thousand pixels wide: more points than this cannot be told
# apart, and only cost the page time to receive and draw.
HISTORY_POINTS = 2000


class History(BaseModel):
    """A session's search as columns, for a chart of any length: each search trial's index,
    status and objective, the best kept objective so far, and the default's objective.

    Past ``HISTORY_POINTS`` trials the rows are a sample (``sampled``; ``total`` counts every
    search trial): in each slice of the index, the lowest and highest objective of the kept
    and of the other trials, plus every trial where the incumbent changed and the last one.
    The incumbent drawn as a step line through these rows is the exact one."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    idx: list[int]
    status: list[str]
    objective: list[float | None]
    incumbent: list[float | None]
    baseline: float | None
    total: int = 0
    sampled: bool = False


_RUNNING = TrialFilter(statuses=("running",))
_CACHED = 16  # histories kept: a few pages following a few sessions
_CACHE: dict[tuple[Any, ...], Any] = {}
T = TypeVar("T")
_LOCK = threading.Lock()  # the server's routes run in a pool of threads


def _incumbent(status: list[str], objective: list[float | None]) -> list[float | None]:
    best: float | None = None
    out: list[float | None] = []
    for s, o in zip(status, objective, strict=True):
        if s == "keep" and o is not None and (best is None or o > best):
            best = o
        out.append(best)
    return out


def _sample(
    status: list[str], objective: list[float | None], incumbent: list[float | None], points: int
) -> list[int]:
    """Positions to draw: every incumbent change, the last row, and in each slice of the index
    the lowest and highest objective of the kept trials and of the others (trials without an
    objective draw no marker), so the cloud keeps its envelope."""
    n = len(status)
    keep = {i for i in range(n) if i == 0 or incumbent[i] != incumbent[i - 1]}
    keep.add(n - 1)
    slices = max(1, (points - len(keep)) // 4)
    width = -(-n // slices)
    for lo in range(0, n, width):
        groups: dict[bool, list[tuple[float, int]]] = {}
        for i in range(lo, min(n, lo + width)):
            o = objective[i]
            if o is not None:
                groups.setdefault(status[i] == "keep", []).append((o, i))
        for rows in groups.values():
            keep.update((min(rows)[1], max(rows)[1]))
    return sorted(keep)


def history(settings: Settings, session_id: str, points: int = HISTORY_POINTS) -> History:
    """The optimisation history of a session with its incumbent line, sampled down to about
    ``points`` rows when longer (see :class:`History`).

    Raises:
        NoJournal, NotFound: no such session.
    """
    return read_cached(
        settings, session_id, ("history", points),
        lambda j: _columns(j.trials.objective_columns(session_id), points),
    )  # fmt: skip


def read_cached(
    settings: Settings, session_id: str, what: tuple[Any, ...], read: Callable[[Journal], T]
) -> T:
    """``read(journal)`` of a session, kept under the session's trial count and count of
    running trials (every start and every finish changes them; a finished trial's row is never
    written again): a page polling a session of 50,000 trials reads it again only when it
    changed. ``what`` names the read.

    Raises:
        NoJournal, NotFound: no such session.
    """
    with open_journal(settings) as j:
        j.sessions.get(session_id)
        key = (
            str(settings.journal_path), session_id, *what,
            j.trials.total(session_id), j.trials.count(session_id, _RUNNING),
        )  # fmt: skip
        with _LOCK:
            cached = _CACHE.get(key)
        if cached is not None:
            return cached  # type: ignore[no-any-return]
        found = read(j)
    with _LOCK:
        _CACHE[key] = found
        while len(_CACHE) > _CACHED:
            del _CACHE[next(iter(_CACHE))]
    return found


def _columns(cols: dict[str, list[Any]], points: int) -> History:
    search = [i for i, k in enumerate(cols["kind"]) if k == "search"]
    base = [cols["objective"][i] for i, k in enumerate(cols["kind"]) if k == "baseline"]
    idx = [cols["idx"][i] for i in search]
    status = [cols["status"][i] for i in search]
    objective = [cols["objective"][i] for i in search]
    incumbent = _incumbent(status, objective)
    rows = _sample(status, objective, incumbent, points) if len(idx) > points else range(len(idx))
    return History(
        idx=[idx[i] for i in rows],
        status=[status[i] for i in rows],
        objective=[objective[i] for i in rows],
        incumbent=[incumbent[i] for i in rows],
        baseline=next((b for b in base if b is not None), None),
        total=len(idx),
        sampled=len(rows) < len(idx),
    )


__all__ = ["HISTORY_POINTS", "History", "history", "read_cached"]
