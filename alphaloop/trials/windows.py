"""The windows the frozen evaluator scores, and the one split that serves an explicit window.

Part of the frozen evaluator (:mod:`alphaloop.trials`): proposers never edit it. A window is
either one of the data's named windows (``"validation"``, ``"test"``) or explicit rows
(:class:`Rows`) or dates (:class:`Dates`) of the data. The evaluator's code scores named
windows only, so :func:`split_for` hands it a copy of the data whose VALIDATION *is* the
explicit window. The copy ends on the window's last day: the history before the window stays in
place for the lookback and the scenarios, and no row after the window (TEST included) is there
to be read. Training for an explicit window ends before it: the data's TRAIN rows before the
window, or the rows :attr:`Rows.train` names (walk-forward's anchored and rolling training).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import NamedTuple

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, model_validator

from alphaloop.exceptions import InvalidRequest
from alphaloop.market import MarketData, Window
from alphaloop.trials.backtest import window_slice

__all__ = ["EXPLICIT", "Dates", "EvalWindow", "Rows", "Split", "split_for"]

# What an evaluation on explicit rows or dates reports as its window; its dates say which.
EXPLICIT = "explicit"


class Rows(BaseModel):
    """Rows ``start .. stop - 1`` of ``data.returns`` to score.

    ``train`` (``(first, stop)``, stop exclusive) is where a config's PPO trains; by default
    the data's TRAIN rows before ``start``. Either way training ends before the window.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    start: int = Field(ge=0)
    stop: int = Field(gt=0)
    train: tuple[int, int] | None = None

    @model_validator(mode="after")
    def _ordered(self) -> Rows:
        if self.stop <= self.start:
            raise ValueError(f"rows {self.start}..{self.stop} are empty: stop must exceed start")
        if self.train is not None:
            first, stop = self.train
            if not 0 <= first < stop <= self.start:
                raise ValueError(
                    f"training rows {first}..{stop} must be non-empty and end at or before the "
                    f"window's first row {self.start}"
                )
        return self

    @classmethod
    def of(cls, rows: slice, train: slice | None = None) -> Rows:
        """The window of a row slice (and a training slice)."""
        return cls(
            start=rows.start,
            stop=rows.stop,
            train=None if train is None else (train.start, train.stop),
        )


class Dates(BaseModel):
    """The trading days from ``start`` to ``end`` (inclusive) of the data."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    start: dt.date
    end: dt.date

    @model_validator(mode="after")
    def _ordered(self) -> Dates:
        if self.end < self.start:
            raise ValueError(f"the window's start {self.start} is after its end {self.end}")
        return self

    def rows(self, data: MarketData) -> Rows:
        """Its rows of ``data``.

        Raises:
            InvalidRequest: no trading day of the data falls between the dates.
        """
        a = int(data.dates.searchsorted(pd.Timestamp(self.start), side="left"))
        b = int(data.dates.searchsorted(pd.Timestamp(self.end), side="right"))
        if b <= a:
            first, last = data.dates[0].date(), data.dates[-1].date()
            raise InvalidRequest(
                f"no trading day of {data.source!r} ({first}..{last}) falls in "
                f"{self.start}..{self.end}"
            )
        return Rows(start=a, stop=b)


EvalWindow = Window | Rows | Dates


class Split(NamedTuple):
    """What the evaluator's code runs on for a window.

    Attributes:
        data: the data (for an explicit window, the copy :func:`split_for` made).
        window: the named window of ``data`` that is scored.
        rows: its rows, the same in ``data`` and in the data it came from.
        label: ``"validation"``, ``"test"`` or :data:`EXPLICIT`.
    """

    data: MarketData
    window: Window
    rows: slice
    label: str


def split_for(data: MarketData, window: EvalWindow) -> Split:
    """The split the evaluator scores ``window`` on (see the module docstring).

    Raises:
        ValueError: an unknown window name.
        InvalidRequest: rows beyond the data's last row, or dates with no trading day.
    """
    if isinstance(window, str):
        return Split(data, window, window_slice(data, window), window)
    rows = window.rows(data) if isinstance(window, Dates) else window
    if rows.stop > len(data.returns):
        raise InvalidRequest(
            f"rows {rows.start}..{rows.stop} run past the {len(data.returns)} rows of "
            f"{data.source!r}"
        )
    if rows.train is not None:
        train = slice(*rows.train)
    else:
        train = slice(data.train.start, min(data.train.stop, rows.start))
    end = rows.stop
    windowed = dataclasses.replace(
        data,
        returns=data.returns[:end],
        dates=data.dates[:end],
        train=train,
        val=slice(rows.start, end),
        test=slice(end, end),
    )
    return Split(windowed, "validation", windowed.val, EXPLICIT)
