"""What every benchmark shares: the ``--quick`` flag, timing, and the summary rows that
``benchmarks.run_all`` gathers into one table.

A summary row is ``(measure, value, reference)``: the reference is a target to read the value
against, or the figure it is a ratio of. Benchmarks print numbers; they assert nothing.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

SummaryRow = tuple[str, str, str]


def parse_quick(description: str, argv: list[str] | None = None) -> bool:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--quick", action="store_true", help="fewer repeats and smaller budgets (a smoke run)"
    )
    return parser.parse_args(argv).quick


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    began = time.perf_counter()
    out = fn()
    return time.perf_counter() - began, out


def print_rows(rows: list[tuple[str, str]], indent: str = "  ") -> None:
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        print(f"{indent}{name:<{width}}  {value}")
