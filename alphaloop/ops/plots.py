"""A session's search as the page's plots read it.

- The optimisation history (:func:`history`): the search trials' objectives as columns with the
  incumbent line, sampled down to what a chart's pixels can show.
- The study (:func:`study`): the columns the plots optuna-dashboard draws are drawn from (slice,
  contour, parallel coordinates, the empirical distribution of the objective, the timeline, the
  per-fold intermediate values). Past :data:`STUDY_POINTS` search trials the rows are a sample:
  the best trials by objective, then every k-th of the rest (each status keeps its share); the
  distribution of the objective is given apart, as quantiles of every scored trial, so it is
  exact at any length.
- Parallel coordinates of the knobs that varied against the objective, and knob importance by
  optuna's evaluators (fANOVA or PED-ANOVA) on the same trials, as plotly JSON
  (``Plotly.newPlot(div, data, layout)``).

The history and the study are read from covering indexes and kept per session state
(:func:`read_cached`): the answer is cached under the session's trial count and count of
running trials, which every start and every finish changes (a finished trial's status and
objective are never written again).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict

from alphaloop.exceptions import InvalidRequest
from alphaloop.journal import Journal, TrialFilter, TrialRecord
from alphaloop.journal.status import RACED_OUT
from alphaloop.knobs import KNOB_NAMES, KNOBS, optuna_distributions
from alphaloop.ops._journal import open_journal
from alphaloop.settings import Settings

# The history. A chart is at most a couple of thousand pixels wide: more points than this
# cannot be told apart, and only cost the page time to receive and draw.
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


def _envelope(
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
        lambda j: _history_columns(j.trials.objective_columns(session_id), points),
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


def _history_columns(cols: dict[str, list[Any]], points: int) -> History:
    search = [i for i, k in enumerate(cols["kind"]) if k == "search"]
    base = [cols["objective"][i] for i, k in enumerate(cols["kind"]) if k == "baseline"]
    idx = [cols["idx"][i] for i in search]
    status = [cols["status"][i] for i in search]
    objective = [cols["objective"][i] for i in search]
    incumbent = _incumbent(status, objective)
    rows = _envelope(status, objective, incumbent, points) if len(idx) > points else range(len(idx))
    return History(
        idx=[idx[i] for i in rows],
        status=[status[i] for i in rows],
        objective=[objective[i] for i in rows],
        incumbent=[incumbent[i] for i in rows],
        baseline=next((b for b in base if b is not None), None),
        total=len(idx),
        sampled=len(rows) < len(idx),
    )


# The study.
STUDY_POINTS = 3000  # rows drawn: more markers than this only slow every plot down
EDF_POINTS = 400  # quantiles of the objective's distribution
_BEST_SHARE = 0.2  # of a sample: the best trials, so the top of every plot is exact


class Study(BaseModel):
    """A session's search trials as columns (``idx``, ``status`` in the shown vocabulary,
    comparable ``objective``, ``started_at``/``finished_at``, each knob that varied over them
    under ``knobs``, each fold's objective under ``folds``, ``max_drawdown`` and any limit's
    ``violation``), ``total`` search trials and whether the rows are a sample; ``edf`` is the
    sorted objectives of every scored search trial (their quantiles past :data:`EDF_POINTS`),
    ``edf_total`` how many there are; ``max_drawdown_limit`` the session's (None: no limit)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    metric: str
    idx: list[int]
    status: list[str]
    objective: list[float | None]
    started_at: list[str]
    finished_at: list[str | None]
    knobs: dict[str, list[float | None]]
    folds: list[list[float]]
    max_drawdown: list[float | None]
    violation: list[str | None]
    max_drawdown_limit: float | None
    n_folds: int | None
    edf: list[float]
    edf_total: int
    total: int
    sampled: bool


def _best_and_spread(objective: list[float | None], points: int) -> list[int]:
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
        settings, session_id, ("study", points), lambda j: _columns_of_study(j, session_id, points)
    )


def _columns_of_study(j: Journal, session_id: str, points: int) -> Study:
    # Columns first, the configs and folds of the sampled trials only: a search of 50,000
    # trials is not parsed row by row to draw 3,000 of them.
    s = j.sessions.get(session_id)
    cols = j.trials.search_columns(session_id)
    pairs = zip(cols["status"], cols["objective"], strict=True)
    objective = [None if status == RACED_OUT else o for status, o in pairs]
    keep = _best_and_spread(objective, points)
    ids = [cols["id"][i] for i in keep]
    rows = j.trials.sampled(ids)
    # the knobs that varied over the drawn trials (the best of them all among them)
    varied = [k for k in KNOB_NAMES if len({rows[t]["config"].get(k) for t in ids}) > 1]
    by_fold = j.folds.objectives(ids)
    counts = j.folds.counts(ids)
    scored = [o for o in objective if o is not None]
    return Study(
        metric=s.objective.metric,
        idx=[cols["idx"][i] for i in keep],
        status=[cols["status"][i] for i in keep],
        objective=[objective[i] for i in keep],
        started_at=[rows[t]["started_at"] for t in ids],
        finished_at=[rows[t]["finished_at"] for t in ids],
        knobs={k: [_number(rows[t]["config"].get(k)) for t in ids] for k in varied},
        folds=[by_fold.get(t, []) for t in ids],
        max_drawdown=[_number(rows[t]["max_drawdown"]) for t in ids],
        violation=[rows[t]["violation"] for t in ids],
        max_drawdown_limit=s.objective.max_drawdown,
        n_folds=max((n for _, n in counts.values()), default=0) or None,
        edf=_quantiles(scored, EDF_POINTS),
        edf_total=len(scored),
        total=len(objective),
        sampled=len(keep) < len(objective),
    )


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) else None


# Parallel coordinates and knob importance.
Evaluator = Literal["fanova", "ped_anova"]
MAX_LINES = 5000  # parallel coordinates: the best lines beyond this are drawn, the rest dropped
_SCORED = ("keep", "discard")


def scored_trials(settings: Settings, session_id: str) -> list[TrialRecord]:
    """The search trials of a session that finished with an objective (no series read).

    Raises:
        NoJournal, NotFound: no such session.
    """
    with open_journal(settings) as j:
        j.sessions.get(session_id)
        rows = j.trials.of_session(session_id, "search", series=False)
    return [t for t in rows if t.status.value in _SCORED and t.objective is not None]


def varying_knobs(trials: list[TrialRecord]) -> list[str]:
    """The knobs that took more than one value over ``trials``, in table order."""
    return [k for k in KNOBS if len({t.config.get(k) for t in trials}) > 1]


def _need(trials: list[TrialRecord], knobs: list[str], what: str) -> None:
    if len(trials) < 2 or not knobs:
        raise InvalidRequest(
            f"{what} needs at least 2 scored search trials with a knob that varies; this session "
            f"has {len(trials)} scored and {len(knobs)} varying knobs"
        )


def parallel_coordinates(settings: Settings, session_id: str) -> dict[str, Any]:
    """Parallel coordinates: one axis per knob that varied, then the objective, one line per
    scored trial coloured by its objective (the best :data:`MAX_LINES` when there are more)."""
    trials = scored_trials(settings, session_id)
    knobs = varying_knobs(trials)
    _need(trials, knobs, "parallel coordinates")
    trials = sorted(trials, key=lambda t: t.objective or 0.0, reverse=True)[:MAX_LINES]
    objective = [t.objective for t in trials]
    dims = [
        {
            "label": k,
            "values": [t.config.get(k) for t in trials],
            "range": [KNOBS[k].low, KNOBS[k].high],
        }
        for k in knobs
    ]
    dims.append({"label": "objective", "values": objective})
    return {
        "data": [{"type": "parcoords", "dimensions": dims,
                  "line": {"color": objective, "colorscale": "Viridis", "showscale": True}}],
        "layout": {"title": {"text": f"knobs against the objective ({len(trials)} trials)"}},
    }  # fmt: skip


class Importance(BaseModel):
    """How much of the objective's variance each knob explains, largest first."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    evaluator: Evaluator
    n_trials: int
    importances: dict[str, float]


def _optuna_study(trials: list[TrialRecord], knobs: list[str]) -> Any:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    dists = optuna_distributions(knobs)
    found = optuna.create_study(direction="maximize")
    found.add_trials(
        [
            optuna.trial.create_trial(
                params={k: t.config[k] for k in knobs}, distributions=dists, value=t.objective
            )
            for t in trials
            if all(k in t.config for k in knobs)
        ]
    )
    return found


def knob_importance(
    settings: Settings, session_id: str, evaluator: Evaluator = "fanova"
) -> Importance:
    """Knob importance over the session's scored search trials by ``optuna.importance``.

    Raises:
        InvalidRequest: fewer than 2 scored trials, or no knob varied.
    """
    from optuna.importance import (
        FanovaImportanceEvaluator,
        PedAnovaImportanceEvaluator,
        get_param_importances,
    )

    trials = scored_trials(settings, session_id)
    knobs = varying_knobs(trials)
    _need(trials, knobs, "knob importance")
    search = _optuna_study(trials, knobs)
    judge = (
        FanovaImportanceEvaluator(seed=0)
        if evaluator == "fanova"
        else PedAnovaImportanceEvaluator()
    )
    found = get_param_importances(search, evaluator=judge)
    return Importance(
        evaluator=evaluator,
        n_trials=len(search.trials),
        importances={k: float(v) for k, v in found.items()},
    )


def importance_figure(imp: Importance) -> dict[str, Any]:
    names = list(imp.importances)[::-1]  # largest at the top of a horizontal bar chart
    return {
        "data": [{"type": "bar", "orientation": "h", "y": names,
                  "x": [imp.importances[n] for n in names]}],
        "layout": {"title": {"text": f"knob importance ({imp.evaluator}, {imp.n_trials} trials)"},
                   "xaxis": {"title": {"text": "share of the objective's variance"}},
                   "margin": {"l": 140}},
    }  # fmt: skip


__all__ = [
    "EDF_POINTS",
    "HISTORY_POINTS",
    "STUDY_POINTS",
    "History",
    "Importance",
    "Study",
    "history",
    "importance_figure",
    "knob_importance",
    "parallel_coordinates",
    "read_cached",
    "scored_trials",
    "study",
    "varying_knobs",
]
