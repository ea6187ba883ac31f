"""The embedded reader of the validation chart: PBO and its logits, the deflated Sharpe, the
walk-forward windows against equal weight, and the gates.

It reads the figure's traces and the model the chart was drawn from
(:class:`~alphaloop.charts.validation.ValidationDrawn`), never the figure's metadata.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from alphaloop.charts import validation as V
from alphaloop.charts._reading import Reading, pct, plural
from alphaloop.evidence import GateReport, PBOSummary
from alphaloop.exceptions import InvalidRequest


def _logit_bullets(fig: go.Figure, pbo: PBOSummary) -> list[str]:
    bars = next((t for t in fig.data if t.name == V.LOGIT_TRACE), None)
    if bars is None or bars.y is None:
        raise InvalidRequest("the validation chart has no PBO logits to read")
    counts = np.asarray(bars.y, dtype=float)
    top = int(np.argmax(counts))
    lo, hi = bars.customdata[top]
    q = pbo.logit_quantiles
    nan = float("nan")
    return [
        f"PBO {pbo.pbo:.2f}: in {pct(pbo.pbo)} of {pbo.n_combinations:,} CSCV splits "
        f"({pbo.n_blocks} blocks of {pbo.n_days} days, {pbo.n_trials} search trials) "
        "the in-sample winner finished at or below the out-of-sample median.",
        f"Median logit {q.get('50%', nan):+.2f} (5% to 95%: {q.get('5%', nan):+.2f} to "
        f"{q.get('95%', nan):+.2f}); the tallest bin, logit {lo:+.2f} to {hi:+.2f}, "
        f"holds {int(counts[top]):,} splits. The in-sample winner lost money out of sample in "
        f"{pbo.prob_oos_loss:.1%} of splits.",
    ]


def _dsr_bullet(dsr: V.DsrShown, n: int) -> str | None:
    if dsr.dsr is None:
        return None
    line = f"Deflated Sharpe {dsr.dsr:.3f} with N = {n} search trials"
    if dsr.dsr_effective is not None and dsr.n_effective is not None:
        line += f"; under N effective = {dsr.n_effective:.1f}: {dsr.dsr_effective:.3f}"
    return line + " (above 0.95 is 95% confidence the Sharpe is not the luck of the best of N)."


def _window_bullets(fig: go.Figure) -> list[str]:
    bullets = []
    ew = next((t for t in fig.data if t.name == V.EQUAL_WEIGHT_TRACE), None)
    for t in fig.data:
        if not t.name.startswith("walk-forward Sharpe"):
            continue
        scheme = t.name[t.name.index("(") + 1 : -1]
        y, x = np.asarray(t.y, dtype=float), list(t.x)
        lo, hi = int(np.argmin(y)), int(np.argmax(y))
        line = (
            f"Walk-forward ({scheme}): Sharpe {y[lo]:.2f} ({x[lo]}) to {y[hi]:.2f} ({x[hi]}) "
            f"over {plural(len(y), 'window')}, mean {y.mean():.2f}"
        )
        if ew is not None and len(ew.y) == len(y):
            base = np.asarray([np.nan if v is None else v for v in ew.y], dtype=float)
            line += f"; above equal weight in {int((y > base).sum())} of {len(y)}"
        bullets.append(line + ".")
    return bullets


def _gates_bullet(gates: GateReport | None) -> str | None:
    if gates is None or not gates.results:
        return None
    failed = [g.gate for g in gates.results if not g.passed]
    verdict = "GO" if not failed else "NO-GO"
    line = f"Gates: {verdict}, {len(gates.results) - len(failed)} of {len(gates.results)} passed"
    return line + (f"; failed: {', '.join(failed)}." if failed else ".")


def read_validation(fig: go.Figure, drawn: V.ValidationDrawn | None) -> Reading:
    """Key figures and bullets of a validation chart, ``fig``, drawn from ``drawn``.

    Raises:
        InvalidRequest: no model to read (a figure alone) or no logits in the figure.
    """
    if drawn is None:
        raise InvalidRequest("a validation chart is read with the report it was drawn from")
    pbo, dsr, wf = drawn.pbo, drawn.deflated_sharpe, drawn.walk_forward
    bullets = _logit_bullets(fig, pbo)
    windows = _window_bullets(fig)
    extra = [_dsr_bullet(dsr, drawn.n_search_trials), _gates_bullet(drawn.gates)]
    bullets += [b for b in extra if b] + (windows or ["No walk-forward has been run yet."])
    facts = {
        "pbo": pbo.pbo,
        "n_combinations": pbo.n_combinations,
        "logit_quantiles": pbo.logit_quantiles,
        "deflated_sharpe": dsr.model_dump(mode="json"),
        "gates_passed": drawn.gates.passed if drawn.gates else None,
        "walk_forward": [m.model_dump(mode="json") for m in wf.summaries] if wf else [],
    }
    return facts, bullets
