"""Where a walk's epochs fall: the data cut at each, and the period each trades.

An epoch starts on the first trading day of a year, quarter or month (the walk's cadence). Its
session sees the data before that day only: its VALIDATION is the last ``L`` days before the
epoch, where ``L`` is the length of the VALIDATION window a lone session on the same data
scores (three years on the embedded S&P 500 set), its folds tile the history before that
(:mod:`alphaloop.trials.folds`, purged as in any session), and its TEST is the period the
epoch trades: up to the next epoch, where the data is cut (``DataSpec.test_end``). So each
epoch is a normal session on a shorter history, and each out-of-sample day is traded once.

The first epoch is the first one whose session's folds fit before it; a period shorter than a
session's shortest TEST (:data:`~alphaloop.market.MIN_TEST_ROWS`, three weeks of trading days)
joins the one before.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import pandas as pd

from alphaloop.exceptions import InvalidRequest
from alphaloop.market import MIN_TEST_ROWS, MIN_TRAIN_ROWS, MarketData
from alphaloop.trials import PURGE_ROWS, max_folds
from alphaloop.walk_spec import Cadence, WalkSpec

_PERIOD_CODES = {Cadence.yearly: "Y", Cadence.quarterly: "Q", Cadence.monthly: "M"}
_DAYS_PER_YEAR = 252


class Epoch(NamedTuple):
    """One epoch: its index, the windows its session is cut at, and the period it trades.

    ``start`` and ``stop`` are the period's rows of the walk's data (stop exclusive);
    ``train_end``, ``val_end`` and ``test_end`` are the last days of its session's TRAIN,
    VALIDATION and TEST (the period) as ``DataSpec`` takes them.
    """

    index: int
    start: int
    stop: int
    train_end: str
    val_end: str
    test_end: str
    first_day: str
    last_day: str


def fold_days(data: MarketData, spec: WalkSpec | None = None) -> int:
    """``L``: the days of each fold (and of each epoch's VALIDATION): the walk's ``fold_days``,
    else a lone session's VALIDATION length on ``data``."""
    if spec is not None and spec.fold_days is not None:
        return spec.fold_days
    return data.val.stop - data.val.start


def epoch_data(data: MarketData, start: int, stop: int, length: int | None = None) -> MarketData:
    """``data`` as an epoch at row ``start`` trading rows ``start .. stop - 1`` sees it: cut
    after the period, VALIDATION the ``length`` days before the epoch (default
    :func:`fold_days`), TRAIN the rest."""
    length = length or fold_days(data)
    return dataclasses.replace(
        data,
        returns=data.returns[:stop],
        dates=data.dates[:stop],
        train=slice(0, start - length),
        val=slice(start - length, start),
        test=slice(start, stop),
    )


def _boundaries(dates: pd.DatetimeIndex, cadence: Cadence) -> list[int]:
    """The first row of each year, quarter or month of ``dates`` (after the first row)."""
    periods = dates.to_period(_PERIOD_CODES[cadence])
    changed = periods[1:] != periods[:-1]
    return [i + 1 for i, c in enumerate(changed) if c]


def _folds_fit(data: MarketData, row: int, folds: int, length: int) -> bool:
    if row - length < MIN_TRAIN_ROWS:
        return False
    return max_folds(epoch_data(data, row, row + 1, length)) >= folds


def _day(data: MarketData, row: int) -> str:
    return data.dates[row].date().isoformat()


def _needed_text(length: int, folds: int, cadence: Cadence) -> str:
    period = {Cadence.yearly: 252, Cadence.quarterly: 63, Cadence.monthly: 21}[cadence]
    days = MIN_TRAIN_ROWS + PURGE_ROWS + folds * length + 2 * period
    return f"{days} trading days (about {days / _DAYS_PER_YEAR:.1f} years)"


def plan(spec: WalkSpec, data: MarketData) -> list[Epoch]:
    """The epochs of ``spec`` on ``data`` (the walk's data, split as a lone session splits it).

    Raises:
        InvalidRequest: a start before the first epoch the folds fit at, or after the data; an
            end before the start; or data too short for two epochs (the message names what
            fits, or the shortest span that works).
    """
    folds = spec.session.folds or 1
    length = fold_days(data, spec)
    last = len(data.dates) - 1
    if spec.end is not None:
        last = int(data.dates.searchsorted(pd.Timestamp(spec.end), side="right")) - 1
    rows = [b for b in _boundaries(data.dates, spec.cadence) if b <= last]
    fitting = [b for b in rows if _folds_fit(data, b, folds, length)]
    span = f"{data.source!r} ({_day(data, 0)}..{_day(data, len(data.dates) - 1)})"
    what = f"{folds} fold(s) of {length} days"
    if not fitting:
        raise InvalidRequest(
            f"{span} is too short for a {spec.cadence.value} walk: the first epoch needs "
            f"{what} before it and two epochs need {_needed_text(length, folds, spec.cadence)}"
        )
    if spec.start is not None:
        wanted = pd.Timestamp(spec.start)
        if wanted < data.dates[fitting[0]]:
            raise InvalidRequest(
                f"a walk on {span} cannot start on {spec.start}: its sessions need {what} "
                f"before the first epoch; the earliest {spec.cadence.value} start is "
                f"{_day(data, fitting[0])}"
            )
        fitting = [b for b in fitting if data.dates[b] >= wanted]
    starts = _merge_short(fitting, last + 1)
    if len(starts) < 2:
        raise InvalidRequest(
            f"{span} holds fewer than two {spec.cadence.value} epochs between "
            f"{_day(data, fitting[0]) if fitting else spec.start} and "
            f"{_day(data, last)}; a walk needs {_needed_text(length, folds, spec.cadence)}"
            + (f", or an earlier start than {spec.start}" if spec.start else "")
        )
    stops = [*starts[1:], last + 1]
    return [
        Epoch(
            index=i,
            start=a,
            stop=b,
            train_end=_day(data, a - length - 1),
            val_end=_day(data, a - 1),
            test_end=_day(data, b - 1),
            first_day=_day(data, a),
            last_day=_day(data, b - 1),
        )
        for i, (a, b) in enumerate(zip(starts, stops, strict=True))
    ]


def _merge_short(starts: list[int], end: int) -> list[int]:
    """``starts`` less each one whose period (up to the next start, or ``end``) is shorter than
    :data:`MIN_TEST_ROWS`: that period joins the one before (a short first one is left out)."""
    stops = [*starts[1:], end]
    return [a for a, b in zip(starts, stops[: len(starts)], strict=True) if b - a >= MIN_TEST_ROWS]
