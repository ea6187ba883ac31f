"""Plots of a session's search over its journaled trials: parallel coordinates of the knobs
that varied against the objective, and knob importance by optuna's evaluators (fANOVA or
PED-ANOVA) on the same trials. Figures are plotly JSON (``Plotly.newPlot(div, data, layout)``).
The optimisation history with the incumbent line is the ``research_progress`` chart.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from alphaloop.exceptions import InvalidRequest
from alphaloop.journal import TrialRecord
from alphaloop.knobs import KNOBS, optuna_distributions
from alphaloop.ops._journal import open_journal
from alphaloop.settings import Settings

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


def _study(trials: list[TrialRecord], knobs: list[str]) -> Any:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    dists = optuna_distributions(knobs)
    study = optuna.create_study(direction="maximize")
    study.add_trials(
        [
            optuna.trial.create_trial(
                params={k: t.config[k] for k in knobs}, distributions=dists, value=t.objective
            )
            for t in trials
            if all(k in t.config for k in knobs)
        ]
    )
    return study


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
    study = _study(trials, knobs)
    judge = (
        FanovaImportanceEvaluator(seed=0)
        if evaluator == "fanova"
        else PedAnovaImportanceEvaluator()
    )
    found = get_param_importances(study, evaluator=judge)
    return Importance(
        evaluator=evaluator,
        n_trials=len(study.trials),
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
    "Importance",
    "importance_figure",
    "knob_importance",
    "parallel_coordinates",
    "scored_trials",
    "varying_knobs",
]
