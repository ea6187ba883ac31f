"""A session's objective as every front end names it: what the number is (the folds' mean of
the metric less one standard error of it, not the metric itself), the limits a trial must
respect, and whether the session's result respects them.

A session scored on several folds ranks its trials by ``fold mean - 1 SE`` of its metric
(:func:`alphaloop.trials.folds.fold_score`); a table or an axis that holds that number says
so, with the metric's own value (the folds' mean Sharpe, say) beside it where it is shown.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from alphaloop.journal import SessionRecord

METRIC_NAMES = {"sharpe": "Sharpe", "sortino": "Sortino", "calmar": "Calmar", "return": "return"}
MINUS = "\u2212"


def _field(value: Any, name: str) -> Any:
    """``value[name]`` of a stored dict or a typed model alike."""
    if value is None:
        return None
    return value.get(name) if isinstance(value, dict) else getattr(value, name, None)


def session_folds(session: SessionRecord) -> int | None:
    """The folds the session's trials are scored on, as it was created with them (None: a
    session from before folds, scored on VALIDATION alone)."""
    folds = _field(_field(session.settings, "spec"), "folds")
    return int(folds) if folds else None


class ObjectiveView(BaseModel):
    """What a session's objective is, in words.

    Attributes:
        metric: the metric (``sharpe``...) and ``metric_name`` as a person reads it.
        folds: the folds each trial is scored on (None or 1: one window).
        label: the objective's name on an axis or a column: "Sharpe, fold mean - 1 SE" (with
            a minus sign).
        explained: a sentence: "the folds' mean Sharpe less one standard error of it (3
            folds)".
        max_drawdown, max_turnover: the limits a trial must respect (None: no limit).
        limits: the limits in words ("max drawdown ≤ 15%"), empty without any.
        admissible: whether the session's reported result respects them (None: no limits, or
            not finalized); ``admissible_reason`` says why not.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    metric: str
    metric_name: str
    folds: int | None
    label: str
    explained: str
    max_drawdown: float | None
    max_turnover: float | None
    limits: str
    admissible: bool | None
    admissible_reason: str | None


def objective_view(session: SessionRecord) -> ObjectiveView:
    """The objective of ``session`` as every view names it."""
    objective = session.objective
    metric = str(_field(objective, "metric") or "sharpe")
    name = METRIC_NAMES.get(metric, metric)
    folds = session_folds(session)
    if folds and folds > 1:
        label = f"{name}, fold mean {MINUS} 1 SE"
        explained = (
            f"the {folds} folds' mean {name} less one standard error of it (fold mean {MINUS} "
            "1 SE): a config that earns its score in every window ranks above one lucky window"
        )
    else:
        label = f"{name} (validation)"
        explained = f"the {name} over VALIDATION (one window: window noise is not measured)"
    dd, to = _field(objective, "max_drawdown"), _field(objective, "max_turnover")
    limits = [f"max drawdown \u2264 {100 * dd:.4g}%" if dd is not None else None,
              f"annual turnover \u2264 {to:g}" if to is not None else None]  # fmt: skip
    final = session.final
    admissible = final.admissible if final is not None and (dd or to) else None
    return ObjectiveView(
        metric=metric,
        metric_name=name,
        folds=folds,
        label=label,
        explained=explained,
        max_drawdown=dd,
        max_turnover=to,
        limits=", ".join(x for x in limits if x),
        admissible=admissible,
        admissible_reason=final.admissible_reason if final is not None else None,
    )


__all__ = ["ObjectiveView", "objective_view", "session_folds"]
