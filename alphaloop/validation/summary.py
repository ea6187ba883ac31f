"""The session-level numbers of the validation suite in journal-sized form: the deflated Sharpe
over one consistent set of trials, and PBO without its 12,870 per-combination rows.

Finalize and ``alphaloop validate`` both call these, so the journal's ``final`` and a later
validation report agree on what N is and which trials it counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from alphaloop.evidence import DeflatedSharpe, PBOSummary
from alphaloop.validation.pbo import DEFAULT_BLOCKS, CSCVResult, cscv_pbo, pbo_interval
from alphaloop.validation.sharpe import (
    deflated_sharpe,
    effective_trials,
    trial_sharpes,
)

# The one set N and the variance of Sharpe ratios are taken over. Baseline runs are the default
# config on noise seeds, not candidates: their near-identical Sharpes would shrink the variance.
DSR_SET = "search trials with validation returns"
HISTOGRAM_BINS = 20
LOGIT_QUANTILES = (0.05, 0.25, 0.5, 0.75, 0.95)


SCORED_STATUSES = ("keep", "discard")


def search_set(rows: Sequence[Any]) -> list[Any]:
    """The trials a session's reported config was selected from, the one set the deflated
    Sharpe and PBO are computed over (:data:`DSR_SET`): search trials (``kind == "search"``)
    that finished ``keep`` or ``discard`` with validation returns. Baseline runs, crashes and
    other kinds of row (test evaluations, re-runs of a candidate on fresh seeds) are not
    candidates. Takes journal trial records (anything with ``kind``, ``status`` and
    ``val_returns``), in their order."""
    return [t for t in rows if t.kind == "search" and t.status in SCORED_STATUSES and t.val_returns]


def fold_block(series: Sequence[Sequence[float]]) -> list[int]:
    """The trials of the largest complete block of a session's fold matrix, by index.

    A search trial's returns are its folds end to end, and racing stops a trial after its most
    recent fold when it is clearly worse there, so the matrix the session scored is ragged:
    every trial has the latest days, only the trials that ran every fold have all of them. CSCV
    needs a complete matrix; of the two complete blocks (every trial on the days all share, or
    the trials of full length on all their days) this takes the one with more cells, the
    shorter-days one on a tie, so PBO is computed over as much of what was scored as it can.
    """
    lengths = [len(s) for s in series]
    longest = [i for i, n in enumerate(lengths) if n == max(lengths)]
    if len(longest) >= 2 and len(longest) * max(lengths) > len(series) * min(lengths):
        return longest
    return list(range(len(series)))


def aligned_matrix(series: Sequence[Sequence[float]]) -> np.ndarray:
    """A (T days, N trials) matrix of the trials' returns on their common (latest) days.

    Trials of one session share the validation window, so the lengths agree; should one differ
    (a window cut by a data change), only the days every trial has are kept, newest aligned.
    """
    if not series:
        raise ValueError("no return series given")
    days = min(len(s) for s in series)
    return np.column_stack([np.asarray(s[len(s) - days :], dtype=float) for s in series])


def session_dsr(candidate: Sequence[float], search: Sequence[Sequence[float]]) -> DeflatedSharpe:
    """The deflated Sharpe of ``candidate`` selected from the ``search`` trials (N = their
    count), with the effective number of independent trials (Li & Ji, on the days all share)
    and the DSR under it. The hurdle uses the variance of the trials' Sharpe ratios, as the
    paper does (see :func:`~alphaloop.validation.sharpe.deflated_sharpe`), measured on as many
    days as the candidate's: racing leaves trials scored on their most recent folds only, and
    a Sharpe of three years varies by luck three times as much as one of 27, so a variance
    taken on the days all trials share would set the hurdle of a 27-year Sharpe far too high.
    The trials scored on the candidate's days are those of full length (two at least, else the
    days all share).

    Raises:
        ValueError: no search series, or fewer than 2 common days.
    """
    matrix = aligned_matrix(search)
    n_eff = effective_trials(matrix)
    full = [s for s in search if len(s) >= len(candidate)]
    sharpes = trial_sharpes(aligned_matrix(full) if len(full) >= 2 else matrix)
    return deflated_sharpe(
        np.asarray(candidate, dtype=float),
        sharpes,
        n_trials=matrix.shape[1],
        n_effective=n_eff if n_eff > 0 else None,
    )


def summarize_pbo(result: CSCVResult, bins: int = HISTOGRAM_BINS) -> PBOSummary:
    """The journal-sized form of a CSCV result: PBO, logit quantiles and histogram."""
    logits = np.asarray(result.logits, dtype=float)
    counts, edges = np.histogram(logits, bins=bins)
    quantiles = np.quantile(logits, LOGIT_QUANTILES)
    return PBOSummary(
        pbo=result.pbo,
        n_blocks=result.n_blocks,
        n_trials=result.n_trials,
        n_days=result.n_days,
        n_combinations=result.n_combinations,
        prob_oos_loss=result.prob_oos_loss,
        degradation_slope=result.degradation_slope,
        logit_quantiles={
            f"{q:.0%}": float(v) for q, v in zip(LOGIT_QUANTILES, quantiles, strict=True)
        },
        histogram_edges=tuple(float(e) for e in edges),
        histogram_counts=tuple(int(c) for c in counts),
    )


def session_pbo(
    search: Sequence[Sequence[float]],
    labels: Sequence[str] | None = None,
    n_blocks: int = DEFAULT_BLOCKS,
) -> PBOSummary:
    """PBO by CSCV over the largest complete block of the search trials' fold returns
    (:func:`fold_block`), summarised with its bootstrap interval.

    Raises:
        ValueError: fewer than 2 trials (PBO needs at least 2 to select among), or too few days
            for ``n_blocks`` blocks.
    """
    if len(search) < 2:
        raise ValueError(
            f"PBO needs at least 2 search trials with validation returns, got {len(search)}"
        )
    keep = fold_block(search)
    names = [labels[i] for i in keep] if labels is not None else [str(i) for i in keep]
    matrix = aligned_matrix([search[i] for i in keep])
    summary = summarize_pbo(cscv_pbo(matrix, n_blocks, labels=names))
    return summary.model_copy(
        update={
            "interval": pbo_interval(matrix, n_blocks),
            "n_trials_left_out": len(search) - len(keep),
        }
    )
