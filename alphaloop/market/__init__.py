"""Price data: the embedded S&P 500 set, CSV/Parquet files, a synthetic generator, date splits.

One module a concern: :mod:`.files` reads CSV and Parquet, :mod:`.dates` parses date columns,
:mod:`.validate` checks a price table, :mod:`.synthetic` generates prices, :mod:`.worlds`
generates markets where the right answer is known (a null and a planted edge), :mod:`.splits`
cuts returns into windows and :mod:`.load` puts them together. Every public name is importable from
``alphaloop.market``.

Decisions a user should know about:

* Dates that are not sorted are sorted, with a warning naming how many rows moved (exports from
  some sites run newest-first; refusing them helps nobody). Duplicated dates are refused.
* A date column is read one way for the whole file, never row by row: dates that could be day
  first or month first (``03/01/2005``) are refused unless the data or ``date_format`` settles
  the order (see :func:`~alphaloop.market.dates.parse_dates`). Reading each row the way it
  happens to fit put 3 January on 1 March, silently.
* CSV files may use ``,``, ``;``, tab or ``|`` (Excel in many locales writes ``;`` with decimal
  commas); a file that is not text (a workbook, a Parquet file named .csv) is refused by name.
* Windows: the embedded set keeps TRAIN to 2016, VALIDATION 2017-2019, TEST 2020-2022; other
  data is split 60% / 20% / 20% of its trading days (see :func:`split`).
* Missing prices (NaN) are refused unless ``fill="ffill"`` is asked for; then they are carried
  forward and leading rows without a price for every asset are dropped, with a warning.
  Non-positive and infinite prices are always refused: carrying them forward would hide a bug
  in the data.
* Everything downstream works on simple daily returns ``prices[t] / prices[t-1] - 1``; the date of
  a return is the date of its closing price.
"""

from typing import TYPE_CHECKING

from alphaloop._lazy import lazy_attributes
from alphaloop.market._common import Fill

if TYPE_CHECKING:
    from alphaloop.market.dates import DATE_COLUMNS
    from alphaloop.market.files import DELIMITERS
    from alphaloop.market.load import load_market, load_prices, market_of, select_symbols
    from alphaloop.market.splits import (
        MIN_EVAL_ROWS,
        MIN_TEST_ROWS,
        MIN_TRAIN_ROWS,
        SP500_TRAIN_END,
        SP500_VAL_END,
        TRAIN_FRACTION,
        VAL_FRACTION,
        MarketData,
        Window,
        split,
    )
    from alphaloop.market.synthetic import synthetic_prices
    from alphaloop.market.validate import validate_prices
    from alphaloop.market.worlds import (
        DRIFT_PER_EDGE,
        GRADED_DAYS,
        PLANTED_HOLD_DAYS,
        WORLD_DAYS,
        flat_prices,
        graded_prices,
        null_prices,
        planted_prices,
        tied_prices,
    )

__all__ = [
    "DATE_COLUMNS",
    "DELIMITERS",
    "DRIFT_PER_EDGE",
    "GRADED_DAYS",
    "MIN_EVAL_ROWS",
    "MIN_TEST_ROWS",
    "MIN_TRAIN_ROWS",
    "PLANTED_HOLD_DAYS",
    "SP500_TRAIN_END",
    "SP500_VAL_END",
    "TRAIN_FRACTION",
    "VAL_FRACTION",
    "WORLD_DAYS",
    "Fill",
    "MarketData",
    "Window",
    "flat_prices",
    "graded_prices",
    "load_market",
    "load_prices",
    "market_of",
    "null_prices",
    "planted_prices",
    "select_symbols",
    "split",
    "synthetic_prices",
    "tied_prices",
    "validate_prices",
]

# pandas and numpy load with the first name that needs them: front ends catch DataWarning
# (and name Fill) without reading any prices.
_LAZY = {
    "DRIFT_PER_EDGE": "alphaloop.market.worlds",
    "GRADED_DAYS": "alphaloop.market.worlds",
    "graded_prices": "alphaloop.market.worlds",
    "PLANTED_HOLD_DAYS": "alphaloop.market.worlds",
    "WORLD_DAYS": "alphaloop.market.worlds",
    "flat_prices": "alphaloop.market.worlds",
    "null_prices": "alphaloop.market.worlds",
    "planted_prices": "alphaloop.market.worlds",
    "tied_prices": "alphaloop.market.worlds",
    "DATE_COLUMNS": "alphaloop.market.dates",
    "DELIMITERS": "alphaloop.market.files",
    "market_of": "alphaloop.market.load",
    "load_market": "alphaloop.market.load",
    "load_prices": "alphaloop.market.load",
    "select_symbols": "alphaloop.market.load",
    "MIN_EVAL_ROWS": "alphaloop.market.splits",
    "MIN_TEST_ROWS": "alphaloop.market.splits",
    "MIN_TRAIN_ROWS": "alphaloop.market.splits",
    "SP500_TRAIN_END": "alphaloop.market.splits",
    "SP500_VAL_END": "alphaloop.market.splits",
    "TRAIN_FRACTION": "alphaloop.market.splits",
    "VAL_FRACTION": "alphaloop.market.splits",
    "MarketData": "alphaloop.market.splits",
    "Window": "alphaloop.market.splits",
    "split": "alphaloop.market.splits",
    "synthetic_prices": "alphaloop.market.synthetic",
    "validate_prices": "alphaloop.market.validate",
}
__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, __all__)
