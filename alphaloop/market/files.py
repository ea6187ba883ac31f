"""Reading a price file: a text CSV (any common delimiter, encoding or decimal comma) or Parquet.

A file that is not what its name says (a workbook, a Parquet file named .csv, a PDF) is refused
by name, with what to do instead; what the file holds is checked by :mod:`.validate`.
"""

from __future__ import annotations

import codecs
import gzip
import logging
import re
import warnings
from pathlib import Path

import pandas as pd

from alphaloop.exceptions import DataWarning, InvalidRequest

logger = logging.getLogger(__name__)

# How a file that is not a text CSV starts, and what to tell its owner.
_MAGIC = {
    b"PAR1": "it is a Parquet file; rename it to .parquet",
    b"PK\x03\x04": "it is a zip archive (an Excel workbook?); export the sheet as CSV",
    b"%PDF": "it is a PDF document; export the prices as CSV",
}
_GZIP_MAGIC = b"\x1f\x8b"
# Bytes that occur in text: printable ASCII, tab, newlines, form feed, and every byte >= 0x80
# (UTF-8 or Latin-1 letters). Anything else, and NUL above all, means binary content.
_TEXT_BYTES = bytes([9, 10, 12, 13, *range(32, 127), *range(128, 256)])
DELIMITERS = (",", ";", "\t", "|")
_SNIFF_BYTES = 1 << 16
_COMMA_NUMBER = re.compile(r"^[+-]?\d+,\d+$")
_DOT_NUMBER = re.compile(r"^[+-]?\d+\.\d+$")
_HOW_TO_WRITE = "a header row such as date,AAPL,MSFT and one row of prices per date"


def _is_binary(sample: bytes) -> bool:
    control = len(sample.translate(None, _TEXT_BYTES))
    return b"\x00" in sample or control > len(sample) // 100


def _sniff_csv(path: Path) -> dict[str, object]:
    """``read_csv`` arguments for a text CSV, or a :class:`InvalidRequest` saying why it is not one.

    The delimiter is the one of ``, ; tab |`` found most often in the header line (Excel in many
    European locales writes ``;``). With a delimiter other than ``,``, a decimal comma is assumed
    when numbers are written only as ``101,5`` and never as ``101.5``.
    """
    with path.open("rb") as fh:
        head = fh.read(_SNIFF_BYTES)
    options: dict[str, object] = {}
    if head.startswith(_GZIP_MAGIC):
        try:
            with gzip.open(path, "rb") as fh:
                head = fh.read(_SNIFF_BYTES)
        except (OSError, EOFError) as err:
            raise InvalidRequest(f"cannot read {path}: broken gzip file ({err})") from None
        options["compression"] = "gzip"
    if not head.strip():
        raise InvalidRequest(f"{path} is empty; a price CSV needs {_HOW_TO_WRITE}")
    for magic, advice in _MAGIC.items():
        if head.startswith(magic):
            raise InvalidRequest(f"{path} is not a text CSV: {advice}")
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        options["encoding"] = "utf-16"
        text = head.decode("utf-16", errors="ignore")
    elif _is_binary(head):
        raise InvalidRequest(
            f"{path} is not a text CSV (binary content in its first bytes); "
            f"export the prices as a UTF-8 CSV with {_HOW_TO_WRITE}"
        )
    else:
        try:
            # Incremental: the sample may end inside a multi-byte character.
            text = codecs.getincrementaldecoder("utf-8-sig")().decode(head, final=False)
        except UnicodeDecodeError:
            warnings.warn(
                f"{path}: not UTF-8 text; read as Latin-1 (save it as UTF-8 if names look wrong)",
                DataWarning,
                stacklevel=4,
            )
            options["encoding"] = "latin-1"
            text = head.decode("latin-1")
    lines = [line for line in text.splitlines() if line.strip()][:50]
    header = lines[0]
    sep = max(DELIMITERS, key=header.count)
    if header.count(sep) == 0:
        sep = ","
    options["sep"] = sep
    if sep != ",":
        fields = [f.strip().strip('"') for line in lines[1:] for f in line.split(sep)]
        if any(_COMMA_NUMBER.match(f) for f in fields) and not any(
            _DOT_NUMBER.match(f) for f in fields
        ):
            options["decimal"] = ","
    logger.debug("%s: read as CSV with %s", path, options)
    return options


def _read_csv(path: Path) -> pd.DataFrame:
    options = _sniff_csv(path)
    try:
        return pd.read_csv(path, **options)  # type: ignore[call-overload]
    except pd.errors.EmptyDataError:
        raise InvalidRequest(f"{path} is empty; a price CSV needs {_HOW_TO_WRITE}") from None
    except UnicodeDecodeError as err:
        raise InvalidRequest(
            f"{path} is not UTF-8 text at byte {err.start}; save it as a UTF-8 CSV"
        ) from None
    except Exception as err:  # pandas raises many types for a broken file
        raise InvalidRequest(
            f"cannot read {path}: {err}; every row needs the same number of "
            f"{options['sep']!r}-separated fields"
        ) from err


def _read_parquet(path: Path) -> pd.DataFrame:
    with path.open("rb") as fh:
        head = fh.read(_SNIFF_BYTES)
    if not head:
        raise InvalidRequest(f"{path} is empty; write prices with DataFrame.to_parquet")
    if not head.startswith(b"PAR1"):
        what = "no Parquet header"
        if not _is_binary(head):
            what = "it looks like text; if it is a CSV, rename it to .csv"
        raise InvalidRequest(
            f"cannot read {path}: not a Parquet file ({what}); "
            "write prices with DataFrame.to_parquet, or give a CSV"
        )
    try:
        return pd.read_parquet(path)
    except Exception as err:  # pyarrow raises many types for a broken file
        raise InvalidRequest(f"cannot read {path}: broken Parquet file ({err})") from err


def read_file(path: Path) -> pd.DataFrame:
    if not path.exists():
        raise InvalidRequest(
            f"price file not found: {path}; check the path, or use --data sp500 or synthetic"
        )
    if not path.is_file():
        raise InvalidRequest(f"{path} is not a file; give a CSV or Parquet file of prices")
    suffix = path.suffix.lower()
    if suffix in (".parquet", ".pq"):
        return _read_parquet(path)
    if suffix in (".csv", ".txt", ".tsv", ".gz"):
        return _read_csv(path)
    raise InvalidRequest(f"unsupported price file type {suffix!r} ({path}); use .csv or .parquet")
