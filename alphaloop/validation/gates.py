"""Go/no-go gates a strategy must pass on its held-out evidence before anyone deploys it.

GO means what a user means: the pick beats what they already have, the untuned default config
and simply holding 1/N, on TEST with confidence, and meets the success criteria there.

- **The two TEST tests** (:mod:`.excess`): one pre-registered paired Sharpe-difference test
  of the pick against each reference on the same TEST days, each at the level
  (``max_excess_p_value``, 5%). GO needs both: an intersection-union test (Berger 1982) is
  at the level without further correction, since it rejects only when every one of its tests
  does. Nothing is deflated by the configs the search tried here: TEST selects nothing (the
  pick was fixed on the folds and is scored once), and the search's multiplicity is paid where
  the selection happened, by the pick's test on the folds (StepM over every config tried, see
  ``meta_agent.finalize.pick``). Charging it again on TEST
  asked a real edge for a z near 3.1 where 1.645 is the test's own level. What TEST is sealed
  against is one session's selection: every other pick judged on the same TEST days of the
  same data looked at them too, so the p-value judged is Holm-adjusted over those looks
  (:func:`~alphaloop.validation.excess.excess_evidence`), and the verdict says how many there
  were.
- **The success criteria**, binding by default, out of sample: Sharpe above 0.8, maximum
  drawdown below 30%, hit (win) rate above 48%, profit factor above 1.1.
- **The selection's own check**: the pick's deflated Sharpe above 0.95 (Bailey & Lopez de
  Prado, 2014: its Sharpe is not the luck of the best of N, deflated by the configs tried as
  that claim requires).
- **PBO is a diagnostic, not a gate** (``max_pbo`` off by default; a user may set it). The
  probability of backtest overfitting (Bailey, Borwein, Lopez de Prado & Zhu, 2017) describes
  the search procedure, not the picked config: under no edge it is a coin flip (PBO >= 0.5 in
  45-53% of sessions), and with a true +0.6 config among near-clones (756 days, correlation
  0.8) it vetoed a quarter of the sessions. The verdict reports it with its bootstrap
  interval (:attr:`GateReport.notes`) and leaves GO to the pre-registered tests.

A user can change or switch off each threshold (``None``), with the same names in the
settings (``ALPHALOOP_GATES``), on the command line (``--gate NAME=VALUE`` or ``NAME=off``)
and in the API (``gates``). Every threshold is strict, and evidence that is missing or not a
number fails its gate: a gate that cannot be checked has not been passed. The one-line verdict
names the tests that decided it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal

from alphaloop.evidence import ExcessEvidence, GateReport, GateResult
from alphaloop.metrics import Metrics
from alphaloop.spec import Gates
from alphaloop.vocabulary import GATE_NAMES

if TYPE_CHECKING:  # the evaluator's walk-forward is only read here
    from alphaloop.trials import WalkForward

# The references a pick's excess is measured against, and how a report names them.
REFERENCES: dict[str, str] = {"default": "the default config", "equal_weight": "1/N"}


def gate_thresholds(items: list[str] | tuple[str, ...]) -> dict[str, float | None]:
    """``["min_sharpe=1.0", "max_pbo=off"]`` as thresholds by name (None: off), the syntax of
    ``--gate`` and of ``ALPHALOOP_GATES`` (comma-separated there).

    Raises:
        ValueError: an item that is not NAME=VALUE, a name that is not a gate's (the message
            lists the names), or a value that is neither a number nor ``off``.
    """
    out: dict[str, float | None] = {}
    for item in items:
        name, sep, value = (part.strip() for part in item.partition("="))
        if not sep or name not in GATE_NAMES:
            what = f"unknown gate {name!r}" if sep else f"{item!r} is not NAME=VALUE"
            raise ValueError(f"{what}; the gates are {', '.join(GATE_NAMES)}")
        if value.lower() == "off":
            out[name] = None
            continue
        try:
            out[name] = float(value)
        except ValueError:
            raise ValueError(f"gate {name} takes a number or 'off', got {value!r}") from None
    return out


def resolved_gates(
    configured: str | None, asked: Gates | None, max_drawdown: float | None
) -> Gates:
    """The gates a session is judged by: the defaults, under the settings' thresholds
    (``configured``, the ``ALPHALOOP_GATES`` text), under the ones the request set explicitly
    (``asked``), the session's drawdown limit as the drawdown gate unless one of those set it.

    Raises:
        ValueError: ``configured`` names a gate that does not exist or a bad value (the message
            lists the names), or a threshold out of its bounds.
    """
    items = [x for x in (configured or "").split(",") if x.strip()]
    chosen = gate_thresholds(items)
    if asked is not None:
        chosen |= {k: getattr(asked, k) for k in asked.model_fields_set}
    return Gates(**chosen).within(max_drawdown)


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
    window: str = "TEST",
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
        window: what the reasons call the days judged (a walk's: "out-of-sample").

    Returns:
        A verdict per enabled gate and whether all passed: the two TEST tests first (the
        question GO answers), then the success criteria, the deflated Sharpe and PBO.
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
    if gates.max_excess_p_value is not None:
        for reference in REFERENCES:
            evidence = (excess or {}).get(reference)
            results.append(_paired_gate(reference, evidence, gates.max_excess_p_value, window))
    for gate, field, op, label, fmt in _GATES:
        threshold = getattr(gates, field)
        if threshold is not None:
            results.append(_judge(gate, label, fmt, values[gate], threshold, op))
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


def _paired_gate(
    reference: str, evidence: ExcessEvidence | str | None, level: float, window: str = "TEST"
) -> GateResult:
    """The pre-registered paired test of the pick against one reference on ``window`` (TEST),
    at ``level``."""
    name, gate = REFERENCES[reference], f"beats_{reference}"
    if isinstance(evidence, ExcessEvidence):
        t = evidence.test
        label = f"{window} Sharpe {t.sharpe_a:.3f} vs {name}'s {t.sharpe_b:.3f}: p-value"
        if evidence.p_adjusted is not None:
            label += f" {t.p_value:.3f}, Holm-adjusted over {evidence.looks} looks at {window},"
        return _judge(gate, label, "{:.3f}", evidence.decisive_p, level, "<")
    return _missing(gate, f"p-value over {name}", evidence, level, "<")


def _missing(
    gate: str, label: str, why: str | None, threshold: float, op: Literal[">", "<"]
) -> GateResult:
    """A gate whose evidence does not exist, and why (failed: unchecked is not passed)."""
    reason = f"{label} not computed ({why or 'no evidence given'}); needs {op} {threshold:.3f}"
    return GateResult(
        gate=gate, passed=False, value=None, threshold=threshold, comparison=op, reason=reason
    )
