"""Go/no-go gates a strategy must pass on its held-out evidence before anyone deploys it.

The defaults are common practice for a deployable daily strategy: an out-of-sample Sharpe above
0.8, a maximum drawdown below 30%, a hit rate above 48%, a profit factor above 1.1, a deflated
Sharpe ratio above 0.95 (Bailey & Lopez de Prado, 2014: 95% confidence the Sharpe is not the
luck of the best of N) and a probability of backtest overfitting below 0.5 (Bailey, Borwein,
Lopez de Prado & Zhu, 2017: the search's pick beats the out-of-sample median more often than
not). Every threshold is strict, and evidence that is missing or not a number fails its gate:
a gate that cannot be checked has not been passed.

Those absolute gates ask "is this strategy good?". A user deciding whether to deploy a search's
pick asks "is it better than what I already have?": the untuned default config, or simply
holding 1/N. The excess gates ask that on TEST, on the same days (:mod:`.excess`): the paired
Sharpe-difference test of the pick against each reference must reject "no better" at 5%, and
the deflated Sharpe of its excess series, deflated by the configs the search tried, must pass
0.95. A pick that does not beat 1/N with confidence is NO-GO whatever its own Sharpe, and the
summary says so first.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from alphaloop.evidence import ExcessEvidence, GateReport, GateResult
from alphaloop.metrics import Metrics

if TYPE_CHECKING:  # the evaluator's walk-forward is only read here
    from alphaloop.trials import WalkForward

# The references a pick's excess is measured against, and how a report names them.
REFERENCES: dict[str, str] = {"default": "the default config", "equal_weight": "1/N"}


class Gates(BaseModel):
    """Thresholds of the go/no-go gates; ``None`` turns a gate off.

    Attributes:
        min_sharpe: annualised out-of-sample Sharpe must be above this.
        max_drawdown: out-of-sample maximum drawdown (a fraction) must be below this.
        min_hit_rate: share of positive days must be above this.
        min_profit_factor: gains over losses must be above this.
        min_deflated_sharpe: the deflated Sharpe ratio must be above this.
        max_pbo: the probability of backtest overfitting must be below this.
        max_excess_p_value: the paired test of the pick's TEST Sharpe against the default's
            and against 1/N's must reject "no better" below this p-value.
        min_excess_deflated_sharpe: the deflated Sharpe of the pick's TEST excess over each
            reference must be above this.
        min_walk_forward_share: the share of walk-forward windows on unseen data (anchored
            scheme) in which the pick's Sharpe beats 1/N's must be above this (checked by
            ``alphaloop validate``, which runs walk-forward).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    min_sharpe: float | None = Field(default=0.8, allow_inf_nan=False)
    max_drawdown: float | None = Field(default=0.30, gt=0, le=1)
    min_hit_rate: float | None = Field(default=0.48, ge=0, le=1)
    min_profit_factor: float | None = Field(default=1.1, ge=0, allow_inf_nan=False)
    min_deflated_sharpe: float | None = Field(default=0.95, ge=0, le=1)
    max_pbo: float | None = Field(default=0.5, gt=0, le=1)
    max_excess_p_value: float | None = Field(default=0.05, gt=0, lt=1)
    min_excess_deflated_sharpe: float | None = Field(default=0.95, ge=0, le=1)
    min_walk_forward_share: float | None = Field(default=0.5, ge=0, lt=1)

    def within(self, max_drawdown: float | None) -> Gates:
        """These gates with a session's drawdown limit (``--max-drawdown``) as the drawdown
        gate, unless it was set here explicitly: a pick is judged against the limit its
        session searched under, by finalize and by ``validate`` alike."""
        if max_drawdown is None or "max_drawdown" in self.model_fields_set:
            return self
        return self.model_copy(update={"max_drawdown": max_drawdown})


# gate name -> (Gates field, comparison, what the value is, how to show it)
_GATES: tuple[tuple[str, str, Literal[">", "<"], str, str], ...] = (
    ("sharpe", "min_sharpe", ">", "out-of-sample Sharpe", "{:.3f}"),
    ("max_drawdown", "max_drawdown", "<", "max drawdown", "{:.1%}"),
    ("hit_rate", "min_hit_rate", ">", "hit rate", "{:.1%}"),
    ("profit_factor", "min_profit_factor", ">", "profit factor", "{:.3f}"),
    ("deflated_sharpe", "min_deflated_sharpe", ">", "deflated Sharpe", "{:.3f}"),
    ("pbo", "max_pbo", "<", "probability of backtest overfitting", "{:.3f}"),
)


def _judge(
    gate: str, label: str, fmt: str, value: float | None, threshold: float, op: Literal[">", "<"]
) -> GateResult:
    shown = fmt.format(threshold)
    if value is None or not math.isfinite(value):
        why = "not computed" if value is None else f"not a finite number ({value})"
        return GateResult(
            gate=gate,
            passed=False,
            value=None,
            threshold=threshold,
            comparison=op,
            reason=f"{label} {why}; needs {op} {shown}",
        )
    passed = value > threshold if op == ">" else value < threshold
    verdict = "passes" if passed else "fails"
    return GateResult(
        gate=gate,
        passed=passed,
        value=float(value),
        threshold=threshold,
        comparison=op,
        reason=f"{label} {fmt.format(value)} {verdict} {op} {shown}",
    )


def evaluate_gates(
    metrics: Metrics,
    dsr: float | None,
    pbo: float | None,
    gates: Gates | None = None,
    excess: Mapping[str, ExcessEvidence | str] | None = None,
    walk_forward: WalkForward | str | None = None,
) -> GateReport:
    """Checks a strategy's out-of-sample metrics, deflated Sharpe, PBO and its excess over the
    default and 1/N against ``gates``.

    Args:
        metrics: the strategy's metrics on the held-out (test) window.
        dsr: its deflated Sharpe ratio (``DeflatedSharpe.dsr``), None when not computed.
        pbo: the session's PBO (``CSCVResult.pbo``), None when not computed.
        gates: thresholds; the defaults of :class:`Gates` when None.
        excess: per reference (``default``, ``equal_weight``), the pick's excess evidence on
            TEST, or why there is none (say, "the pick is the default config"); a reference
            missing here fails its gates as not computed.
        walk_forward: the pick's walk-forward on unseen data, or why there is none ("not
            enough unseen data"); None leaves the walk-forward gate out (finalize does not run
            walk-forward).

    Returns:
        A verdict per enabled gate, in a fixed order, and whether all passed.
    """
    gates = gates or Gates()
    values = {
        "sharpe": metrics.sharpe,
        "max_drawdown": metrics.max_drawdown,
        "hit_rate": metrics.hit_rate,
        "profit_factor": metrics.profit_factor,
        "deflated_sharpe": dsr,
        "pbo": pbo,
    }
    results = []
    for gate, field, op, label, fmt in _GATES:
        threshold = getattr(gates, field)
        if threshold is not None:
            results.append(_judge(gate, label, fmt, values[gate], threshold, op))
    for reference in REFERENCES:
        results.extend(_excess_gates(reference, (excess or {}).get(reference), gates))
    if walk_forward is not None and gates.min_walk_forward_share is not None:
        results.append(_walk_forward_gate(walk_forward, gates.min_walk_forward_share))
    return GateReport(passed=all(r.passed for r in results), results=tuple(results))


def _walk_forward_gate(walk_forward: WalkForward | str, threshold: float) -> GateResult:
    """The share of unseen walk-forward windows (anchored) in which the pick beat 1/N."""
    label = "share of unseen walk-forward windows beating 1/N"
    if isinstance(walk_forward, str):
        return _missing("walk_forward", label, walk_forward, threshold, ">")
    anchored = next((x for x in walk_forward.summaries if x.scheme == "anchored"), None)
    if anchored is None or not anchored.n_windows:
        return _missing("walk_forward", label, "no anchored windows", threshold, ">")
    share = anchored.beat_equal_weight / anchored.n_windows
    label = f"{label} ({anchored.beat_equal_weight} of {anchored.n_windows})"
    return _judge("walk_forward", label, "{:.0%}", share, threshold, ">")


def _excess_gates(
    reference: str, evidence: ExcessEvidence | str | None, gates: Gates
) -> list[GateResult]:
    """The paired-test gate and the excess deflated Sharpe gate against one reference."""
    name = REFERENCES[reference]
    out = []
    if gates.max_excess_p_value is not None:
        gate, threshold = f"beats_{reference}", gates.max_excess_p_value
        if isinstance(evidence, ExcessEvidence):
            t = evidence.test
            label = f"TEST Sharpe {t.sharpe_a:.3f} vs {name}'s {t.sharpe_b:.3f}: p-value"
            out.append(_judge(gate, label, "{:.3f}", t.p_value, threshold, "<"))
        else:
            out.append(_missing(gate, f"p-value over {name}", evidence, threshold, "<"))
    if gates.min_excess_deflated_sharpe is not None:
        gate, threshold = f"excess_dsr_{reference}", gates.min_excess_deflated_sharpe
        label = f"deflated Sharpe of the excess over {name}"
        if isinstance(evidence, ExcessEvidence):
            out.append(_judge(gate, label, "{:.3f}", evidence.excess_dsr, threshold, ">"))
        else:
            out.append(_missing(gate, label, evidence, threshold, ">"))
    return out


def _missing(
    gate: str, label: str, why: str | None, threshold: float, op: Literal[">", "<"]
) -> GateResult:
    """A gate whose evidence does not exist, and why (failed: unchecked is not passed)."""
    reason = f"{label} not computed ({why or 'no evidence given'}); needs {op} {threshold:.3f}"
    return GateResult(
        gate=gate, passed=False, value=None, threshold=threshold, comparison=op, reason=reason
    )
