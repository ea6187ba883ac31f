"""Loading prices by name or path, picking symbols, and a stored recipe
(:class:`~alphaloop.spec.DataSpec`) loaded again as it was."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from alphaloop.exceptions import InvalidRequest
from alphaloop.market._common import Fill
from alphaloop.market.files import read_file
from alphaloop.market.splits import MarketData, split
from alphaloop.market.synthetic import synthetic_prices
from alphaloop.market.validate import validate_prices
from alphaloop.market.worlds import (
    flat_prices,
    graded_prices,
    null_prices,
    planted_prices,
    tied_prices,
)
from alphaloop.spec import DataSpec

# Seeded generators a data name can ask for as ``NAME`` or ``NAME:SEED``.
GENERATORS = {
    "synthetic": synthetic_prices,
    "null": null_prices,
    "tied": tied_prices,
    "flat": flat_prices,
    "planted": planted_prices,
}


def load_prices(
    source: str | Path = "sp500", fill: Fill = "none", date_format: str | None = None
) -> pd.DataFrame:
    """Loads a daily price table (rows dates, columns assets).

    Args:
        source: ``"sp500"`` (the 20-stock daily set bundled with skfolio, 1990-2022),
            ``"synthetic"`` or ``"synthetic:SEED"`` (see :func:`synthetic_prices`), ``"null"``,
            ``"tied"``, ``"flat"`` and ``"planted"``, each optionally ``:SEED``, and
            ``"graded:EDGE"`` or ``"graded:EDGE:SEED"`` (markets where the right answer is
            known, see :mod:`alphaloop.market.worlds`), or a path to a
            CSV/Parquet file with a date column (or a datetime index) and one column per asset.
        fill: ``"none"`` refuses missing prices; ``"ffill"`` carries them forward.
        date_format: strptime format of a file's date column (``%d/%m/%Y``); needed only when
            the dates can be read two ways. Ignored by the embedded and synthetic sets.
    """
    text = str(source)
    if text == "sp500":
        from skfolio.datasets import load_sp500_dataset

        return validate_prices(load_sp500_dataset(), "sp500", fill)
    name, _, seed_text = text.partition(":")
    if name == "graded":
        return _graded(seed_text)
    if name in GENERATORS:
        try:
            seed = int(seed_text or "0")
        except ValueError:
            raise InvalidRequest(
                f"{name} data seed must be an integer, got {seed_text!r}"
            ) from None
        return GENERATORS[name](seed=seed)
    path = Path(text)
    return validate_prices(read_file(path), str(path), fill, date_format)


def _graded(arguments: str) -> pd.DataFrame:
    """``graded:EDGE`` or ``graded:EDGE:SEED`` (see :func:`graded_prices`)."""
    edge_text, _, seed_text = arguments.partition(":")
    try:
        edge, seed = float(edge_text), int(seed_text or "0")
        return graded_prices(edge, seed=seed)
    except ValueError as err:
        raise InvalidRequest(
            f"graded data is graded:EDGE or graded:EDGE:SEED (EDGE an annualised Sharpe in "
            f"[0, 5], SEED an integer), got graded:{arguments!r}: {err}"
        ) from None


def select_symbols(prices: pd.DataFrame, symbols: list[str] | None) -> pd.DataFrame:
    """Keeps the named columns; an unknown symbol is an error listing the available ones."""
    if not symbols:
        return prices
    unknown = [s for s in symbols if s not in prices.columns]
    if unknown:
        raise InvalidRequest(
            f"unknown symbol(s) {', '.join(unknown)}; available: {', '.join(prices.columns)}"
        )
    if len(set(symbols)) < 2:
        raise InvalidRequest("need at least two distinct symbols")
    return prices[list(dict.fromkeys(symbols))]


def load_market(
    source: str | Path = "sp500",
    *,
    fill: Fill = "none",
    symbols: list[str] | None = None,
    train_end: str | None = None,
    val_end: str | None = None,
    date_format: str | None = None,
    test_end: str | None = None,
) -> MarketData:
    """``load_prices`` + ``select_symbols`` + ``split`` in one call (what the CLI uses)."""
    prices = select_symbols(load_prices(source, fill, date_format), symbols)
    return split(prices, train_end, val_end, source=str(source), test_end=test_end)


def market_of(spec: DataSpec) -> MarketData:
    """:func:`load_market` as ``spec`` says (a session's, a manual run's, a library entry's
    data, loaded exactly as it was)."""
    return load_market(
        spec.data,
        fill=spec.fill,
        symbols=spec.symbols,
        train_end=spec.train_end,
        val_end=spec.val_end,
        date_format=spec.date_format,
        test_end=spec.test_end,
    )
