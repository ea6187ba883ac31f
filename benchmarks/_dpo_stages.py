"""One ``alphaloop dpo train`` in this process, its stages timed: run as a script by
``benchmarks.bench_dpo`` with the tree under test first on ``PYTHONPATH``.

``python benchmarks/_dpo_stages.py HOME MODEL OUT STEPS [--lora]`` runs the command (its
``--json`` output is discarded) and prints one JSON object: seconds per stage and in all.

A stage is a function of ``alphaloop.flywheel.dpo`` (wrapped by name when the tree has it, so
an older tree is timed the same way) or a method of the trainer it builds. What no stage covers
(imports, the journal, the command's start) is ``other``. It imports nothing else from the
benchmarks, so an older tree's ``benchmarks`` package is never mixed in.
"""

from __future__ import annotations

import functools
import io
import json
import sys
import time
from collections import defaultdict
from contextlib import redirect_stdout
from typing import Any

began = time.perf_counter()
# Stage names by the function they time; a held-out scoring runs once before and once after
# training, so its calls are told apart by their order.
FUNCTIONS = {
    "_load_tokenizer": "load tokenizer",
    "fit_pairs": "tokenize and fit pairs",
    "_load_model": "load model",
    "_pair_logps": "held-out scoring",
    "heldout_logps": "held-out scoring",
    "_dpo_trainer": "build trainer (dataset tokenized)",
}
METHODS = {"train": "train steps", "save_model": "save"}
seconds: dict[str, float] = defaultdict(float)
calls: dict[str, int] = defaultdict(int)


def _timed(name: str, fn: Any) -> Any:
    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        calls[name] += 1
        label = name
        if name == "held-out scoring":
            label = f"{name} {'before' if calls[name] == 1 else 'after'}"
        start = time.perf_counter()
        try:
            out = fn(*args, **kwargs)
        finally:
            seconds[label] += time.perf_counter() - start
        if name.startswith("build trainer"):
            for method, stage in METHODS.items():
                setattr(out, method, _timed(stage, getattr(out, method)))
        return out

    return run


def main(argv: list[str]) -> None:
    home, model, out, steps, *rest = argv
    import os

    os.environ["ALPHALOOP_HOME"] = home
    from alphaloop.flywheel import dpo

    for attr, stage in FUNCTIONS.items():
        if hasattr(dpo, attr):
            setattr(dpo, attr, _timed(stage, getattr(dpo, attr)))
    from typer.testing import CliRunner

    from alphaloop.cli import app

    args = ["dpo", "train", "--model", model, "--out", out, "--max-steps", steps, "--json", *rest]
    with redirect_stdout(io.StringIO()):
        result = CliRunner().invoke(app, args)
    if result.exit_code != 0:
        raise SystemExit(f"dpo train failed ({result.exit_code}): {result.output[-2000:]}")
    total = time.perf_counter() - began
    stages = dict(seconds)
    stages["other (imports, journal, start)"] = total - sum(stages.values())
    print(json.dumps({"total_s": total, "stages": stages, "run": json.loads(result.stdout)}))


if __name__ == "__main__":
    main(sys.argv[1:])
