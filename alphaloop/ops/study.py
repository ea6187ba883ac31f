"""A session's search as columns, for the plots a search is read by (the ones optuna-dashboard
draws): slice, contour, parallel coordinates, the empirical distribution of the objective, the
timeline and the per-fold intermediate values. The page draws them all from one answer, kept
until the session changes (:func:`~.history.read_cached`).

Past :data:`STUDY_POINTS` search trials the rows are a sample: the best trials by objective,
then every k-th of the rest (each status keeps its share); the distribution of the objective is
given apart, as quantiles of every scored trial, so it is exact at any length.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from alphaloop.journal import Journal, TrialFilter
from alphaloop.journal.status import RACED_OUT
from alphaloop.knobs import KNOB_NAMES
from alphaloop.ops.history import read_cached
from alphaloop.settings import Settings

STUDY_POINTS = 3000  # rows drawn: more markers than this only slow every plot down
EDF_POINTS = 400  # quantiles of the objective's distribution
_BEST_SHARE = 0.2  # of a sample: the best trials, so the top of every plot is exact


class Study(BaseModel):
    """A session's search trials as columns (``idx``, ``status`` in the shown vocabulary,
    comparable ``objective``, ``started_at``/``finished_at``, each knob that varied over them
    under ``knobs``, each fold's objective under ``folds``), ``total`` search trials and whether the
    rows are a sample; ``edf`` is the sorted objectives of every scored search trial (their
    quantiles past :data:`EDF_POINTS`), ``edf_total`` how many there are."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    metric: str
    idx: list[int]
    status: list[str]
    objective: list[float | None]
    started_at: list[str]
    finished_at: list[str | None]
    knobs: dict[str, list[float | None]]
    folds: list[list[float]]
    n_folds: int | None
    edf: list[float]
    edf_total: int
    total: int
    sampled: bool


def _sample(objective: list[float | None], points: int) -> list[int]:
    """Positions to keep: the best ``_BEST_SHARE`` by objective, then evenly spaced ones."""
    n = len(objective)
    if n <= points:
        return list(range(n))
    scored = sorted((o, i) for i, o in enumerate(objective) if o is not None)
    best = {i for _, i in scored[-int(points * _BEST_SHARE) :]}
    step = n / (points - len(best))
    spread = {int(k * step) for k in range(points - len(best))}
    return sorted(best | spread)


def _quantiles(values: list[float], points: int) -> list[float]:
    values = sorted(values)
    if len(values) <= points:
        return values
    last = len(values) - 1
    return [values[round(k * last / (points - 1))] for k in range(points)]


def study(settings: Settings, session_id: str, points: int = STUDY_POINTS) -> Study:
    """The search of ``session_id`` as columns (see :class:`Study`).

    Raises:
        NoJournal, NotFound: no such session.
    """
    return read_cached(
        settings, session_id, ("study", points), lambda j: _study(j, session_id, points)
    )


def _study(j: Journal, session_id: str, points: int) -> Study:
    # Columns first, the configs and folds of the sampled trials only: a search of 50,000
    # trials is not parsed row by row to draw 3,000 of them.
    s = j.sessions.get(session_id)
    cols = j.trials.search_columns(session_id)
    pairs = zip(cols["status"], cols["objective"], strict=True)
    objective = [None if status == RACED_OUT else o for status, o in pairs]
    keep = _sample(objective, points)
    ids = [cols["id"][i] for i in keep]
    rows = j.trials.sampled(ids)
    # the knobs that varied over the drawn trials (the best of them all among them)
    varied = [k for k in KNOB_NAMES if len({rows[t]["config"].get(k) for t in ids}) > 1]
    by_fold = j.folds.objectives(ids)
    counts = j.folds.counts(ids)
    scored = [o for o in objective if o is not None]
    return Study(
        metric=str(s.objective.get("metric", "objective")),
        idx=[cols["idx"][i] for i in keep],
        status=[cols["status"][i] for i in keep],
        objective=[objective[i] for i in keep],
        started_at=[rows[t]["started_at"] for t in ids],
        finished_at=[rows[t]["finished_at"] for t in ids],
        knobs={k: [_number(rows[t]["config"].get(k)) for t in ids] for k in varied},
        folds=[by_fold.get(t, []) for t in ids],
        n_folds=max((n for _, n in counts.values()), default=0) or None,
        edf=_quantiles(scored, EDF_POINTS),
        edf_total=len(scored),
        total=len(objective),
        sampled=len(keep) < len(objective),
    )


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) else None


_SEARCH = TrialFilter(kinds=("search",))

__all__ = ["EDF_POINTS", "STUDY_POINTS", "Study", "study"]
