"""``alphaloop train`` and ``alphaloop chart`` end to end: the real CLI, journal, PPO, plotly,
kaleido and Chromium; the vision model is the scripted OpenAI-compatible server."""

from __future__ import annotations

import base64
import itertools
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from alphaloop.charts import export as export_module
from alphaloop.charts import plotlyjs_name, png_size
from alphaloop.exceptions import AlphaloopError
from alphaloop.journal import Journal
from alphaloop.settings import Settings

try:  # see conftest.py: ``tests`` is a package only under ``python -m pytest``
    from tests import fake_openai as fake
except ImportError:
    import fake_openai as fake  # type: ignore[no-redef]

VLM = "fake-vlm"
# Tiny PPO: 64 env steps per update on one env.
TINY = ["--data", "synthetic", "--set", "n_steps=64", "--set", "batch_size=64", "--set",
        "n_epochs=3", "--n-envs", "1"]  # fmt: skip
UNSET = {str(a): None for f in Settings.model_fields.values() for a in f.validation_alias.choices}


def cli(home: Path, *args: str, **env: str | None) -> Any:
    """Runs the CLI with only ``ALPHALOOP_HOME`` (and ``env``) set of alphaloop's settings."""
    return CliRunner().invoke(
        __import__("alphaloop.cli", fromlist=["app"]).app,
        list(args),
        env={**UNSET, "ALPHALOOP_HOME": str(home), **env},
    )


def ok_json(result: Any) -> Any:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def one_line(result: Any) -> str:
    return " ".join(result.output.split())


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A research session and a manual run, both made through the CLI."""
    path = tmp_path_factory.mktemp("cli") / "home"
    ok_json(
        cli(path, "research", "max Sharpe", "--mode", "cufolio_only", "--data", "synthetic",
            "--budget", "2", "--noise-seeds", "2", "--proposer", "random", "--json")
    )  # fmt: skip
    yield path


@pytest.fixture(scope="module")
def manual(home: Path) -> dict[str, Any]:
    return ok_json(cli(home, "train", *TINY, "--total-timesteps", str(64 * 20), "--json"))


def sessions(home: Path) -> list[dict[str, Any]]:
    return ok_json(cli(home, "sessions", "--json"))


def research_id(home: Path) -> str:
    return next(s["id"] for s in sessions(home) if s["proposer"] == "random")


# --- train ---------------------------------------------------------------------------------


def test_train_journals_a_run_listed_next_to_sessions(home: Path, manual: dict) -> None:
    session, trial = manual["session"], manual["trial"]
    assert (session["goal"], session["proposer"], session["mode"], session["budget"]) == (
        "manual PPO run",
        "manual",
        "ppo_only",
        1,
    )
    assert session["status"] == "finished" and session["best_trial_id"] == trial["id"]
    assert (trial["kind"], trial["status"], trial["reason"], trial["counted"]) == (
        "search",
        "keep",
        "manual run",
        True,
    )
    assert [p[0] for p in trial["curve"]] == [64 * i for i in range(1, 21)]
    assert Path(trial["policy_path"]).is_file()
    assert trial["objective"] == trial["metrics"]["sharpe"]
    listed = {s["id"]: s for s in sessions(home)}
    assert set(listed) == {session["id"], research_id(home)}
    assert listed[session["id"]]["counted_trials"] == 1
    review = ok_json(cli(home, "journal", session["id"], "--json"))
    assert [t["id"] for t in review["trials"]] == [trial["id"]]


def test_train_shows_progress_and_metrics(tmp_path: Path) -> None:
    result = cli(tmp_path, "train", *TINY, "--total-timesteps", "256")
    assert result.exit_code == 0, result.output
    text = one_line(result)
    assert "manual run s-" in text and "256 env steps" in text and "256/256 steps" in text
    assert "Sharpe" in text and "equal_weight" in text and "min_cvar" in text
    assert "policy saved to" in text and "4 curve points journaled" in text


def test_train_trains_the_budget_and_says_when_n_envs_does_not_divide_it(tmp_path: Path) -> None:
    # The budget is a hard cap split over the env copies: 100 steps on 3 envs trains 99.
    result = cli(tmp_path, "train", *TINY, "--n-envs", "3", "--total-timesteps", "100")
    assert result.exit_code == 0, result.output
    assert (
        "trained 99 env steps (budget 100: the largest multiple of n_envs = 3 within it)"
        in one_line(result)
    )
    run = ok_json(cli(tmp_path, "train", *TINY, "--total-timesteps", "100", "--json"))
    assert (run["env_steps"], run["total_timesteps"]) == (100, 100)
    assert run["trial"]["env_steps"] == 100 == run["trial"]["curve"][-1][0]
    exact = cli(tmp_path, "train", *TINY, "--total-timesteps", "100")
    assert exact.exit_code == 0 and "env steps (budget" not in one_line(exact)


def test_train_rejects_bad_input(tmp_path: Path) -> None:
    unknown = cli(tmp_path, "train", "--data", "synthetic", "--symbols", "AAPL,A01")
    assert unknown.exit_code == 2
    assert "unknown symbol(s) AAPL; available: A00, A01, A02, A03, A04, A05" in one_line(unknown)
    knob = cli(tmp_path, "train", "--data", "synthetic", "--set", "alpha_boost=2")
    assert knob.exit_code == 2 and "alpha_boost" in knob.output
    steps = cli(tmp_path, "train", "--data", "synthetic", "--total-timesteps", "10")
    assert steps.exit_code == 2 and "--total-timesteps" in steps.output
    # Nothing was journaled for refused runs.
    assert not (tmp_path / "journal.db").exists()


# --- chart ---------------------------------------------------------------------------------


def test_chart_usage_errors_exit_2(home: Path, manual: dict, tmp_path: Path) -> None:
    sid = research_id(home)
    cases = {
        ("chart", "pie"): "unknown chart 'pie'",
        ("chart", "weights", "--out", str(tmp_path / "w.svg")): "use a .html or .png",
        ("chart", "weights", "--session", "s-nope"): "no session 's-nope'",
        ("chart", "weights", "--session", sid, "--trial", "99"): "has no trial #99",
        ("chart", "training_curve", "--session", sid): "has a journaled training curve",
        ("chart", "ratio_curve", "--out", str(tmp_path / "r.png"), "--width", "50"): "between",
        ("chart", "ratio_curve", "--session", sid): "a session does not apply",
    }
    for args, needle in cases.items():
        result = cli(home, *args)
        assert result.exit_code == 2, (args, result.output)
        assert needle in one_line(result), (args, result.output)
    assert not list(tmp_path.iterdir())
    empty = cli(tmp_path / "nothing", "chart", "ratio_curve")
    assert empty.exit_code == 2 and "no journal" in empty.output


def test_chart_json_describes_what_was_written(home: Path, manual: dict) -> None:
    out = ok_json(cli(home, "chart", "training_curve", "--session", manual["session"]["id"],
                      "--json"))  # fmt: skip
    assert out["kind"] == "training_curve" and out["format"] == "html"
    assert out["trial_id"] == manual["trial"]["id"] and out["trial_idx"] == 0
    assert out["traces"] == [{"name": "mean episode reward", "points": 20}]
    assert Path(out["out"]) == home / "charts" / f"training_curve-{out['session_id']}-t0.html"
    assert Path(out["out"]).stat().st_size < 1_000_000 and out["read"] is None
    assert (Path(out["out"]).parent / plotlyjs_name()).stat().st_size > 1_000_000


def test_an_out_in_a_missing_folder_is_refused(home: Path, tmp_path: Path) -> None:
    target = tmp_path / "no-such-dir" / "r.html"
    result = cli(home, "chart", "ratio_curve", "--out", str(target))
    assert result.exit_code == 2, result.output
    assert f"the folder {target.parent} does not exist" in one_line(result)
    assert not target.parent.exists()


def test_png_without_chromium_fails_and_html_still_works(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(export_module, "SYSTEM_PATHS", ())
    bare = {"PATH": str(tmp_path / "empty-bin")}
    png = cli(home, "chart", "ratio_curve", "--out", str(tmp_path / "r.png"), **bare)
    assert png.exit_code == 1
    assert "apt-get install chromium" in one_line(png) and not (tmp_path / "r.png").exists()
    html = cli(home, "chart", "ratio_curve", "--out", str(tmp_path / "r.html"), **bare)
    assert html.exit_code == 0, html.output
    assert (tmp_path / "r.html").is_file()


def test_png_export_through_the_cli(home: Path, tmp_path: Path) -> None:
    target = tmp_path / "progress.png"
    result = cli(home, "chart", "research_progress", "--out", str(target), "--width", "800",
                 "--height", "450")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert png_size(target.read_bytes()) == (800, 450)


def test_embedded_read_is_journaled_and_listed(home: Path) -> None:
    sid = research_id(home)
    result = cli(home, "chart", "research_progress", "--session", sid, "--interpret")
    assert result.exit_code == 0, result.output
    text = one_line(result)
    assert "research_progress read" in text and "embedded reader (data-grounded)" in text
    review = ok_json(cli(home, "journal", sid, "--json"))
    read = review["chart_reads"][-1]
    assert read["kind"] == "research_progress" and read["model"] == "embedded-reader"
    assert 4 <= len(read["bullets"]) <= 6 and read["bullets"][0][:30] in text
    with Journal(home / "journal.db") as j:
        best = j.trials.best(sid)
    assert read["context"]["key_figures"]["best"]["trial"] == best.idx
    listing = one_line(cli(home, "journal", sid))
    assert "chart reads" in listing and "embedded-reader" in listing


def test_vlm_read_through_the_cli(home: Path) -> None:
    sid = research_id(home)
    with fake.FakeOpenAI(models=("fake-model", VLM)) as server:
        server.push(fake.text("- one\n- two\n- three\n- four"))
        result = cli(
            home,
            "chart",
            "equity_curves",
            "--session",
            sid,
            "--interpret",
            "--json",
            ALPHALOOP_LLM_BASE_URL=server.base_url,
            ALPHALOOP_VLM_MODEL=VLM,
            ALPHALOOP_LLM_MAX_RETRIES="0",
        )
        [request] = server.chat_requests
    out = ok_json(result)
    read = out["read"]
    assert read["model"] == VLM and read["bullets"] == ["one", "two", "three", "four"]
    assert read["elapsed_s"] > 0 and not read["embedded"]
    image = request["messages"][-1]["content"][1]["image_url"]["url"]
    assert png_size(base64.b64decode(image.split(",", 1)[1])) == (1024, 576)
    with Journal(home / "journal.db") as j:
        row = j.logs.chart_reads(sid)[-1]
        [call] = [c for c in j.logs.llm_calls(sid) if c.purpose == "chart_read"]
    assert (row.model, row.bullets, row.trial_id) == (VLM, read["bullets"], out["trial_id"])
    assert (call.model, call.ok) == (VLM, True)
    plain = cli(home, "journal", sid)
    assert VLM in one_line(plain)


# --- a run followed live from another process ----------------------------------------------


@pytest.mark.slow
def test_curve_is_journaled_live_and_capped(tmp_path: Path) -> None:
    home = tmp_path / "home"
    updates = 210  # more than the 200-point cap
    env = {k: v for k, v in __import__("os").environ.items() if k not in UNSET}
    env["ALPHALOOP_HOME"] = str(home)
    proc = subprocess.Popen(
        [sys.executable, "-c", "from alphaloop.cli import main; main()", "train", *TINY,
         "--total-timesteps", str(64 * updates), "--json"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    seen: list[int] = []
    live: dict[str, Any] | None = None
    try:
        deadline = time.monotonic() + 240
        while proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
            if not (home / "journal.db").exists():
                continue
            try:
                with Journal(home / "journal.db", create=False) as j:
                    rows = [t for s in j.sessions.list() for t in j.trials.of_session(s.id)]
            except AlphaloopError:  # the file exists, its first transaction not yet committed
                continue
            if rows and rows[0].status == "running" and rows[0].curve:
                seen.append(len(rows[0].curve))
                if live is None and len(rows[0].curve) >= 5:
                    live = ok_json(cli(home, "status", "--json"))
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    # Another process saw the curve grow while the trial was still running...
    assert len(set(seen)) >= 3 and max(seen) <= 200
    assert live is not None
    [running] = live["running"]
    assert running["curve_points"] >= 5 and running["latest"][0] % 64 == 0
    # ...and at the end it is an even sample of all 210 updates: first and last kept.
    trial = json.loads(out)["trial"]
    steps = [p[0] for p in trial["curve"]]
    assert len(steps) == 200 and steps[0] == 64 and steps[-1] == 64 * updates
    assert {b - a for a, b in itertools.pairwise(steps)} <= {64, 128}


def test_status_shows_the_live_curve_of_a_running_trial(tmp_path: Path) -> None:
    # A run whose process is gone (it wrote a curve, then died without finishing)...
    code = (
        "import sys\n"
        "from alphaloop.journal import Journal\n"
        "with Journal(sys.argv[1]) as j:\n"
        "    sid = j.sessions.create(goal='manual PPO run', mode='ppo_only', objective={},\n"
        "        proposer='manual', budget=1, seed=0, data_source='synthetic',\n"
        "        data_fingerprint=None, settings={}, baseline_config={})\n"
        "    t = j.trials.start(sid, kind='search', config={}, config_hash=None, delta={},\n"
        "        parent_id=None, seed=0, rationale=None, proposer='manual')\n"
        "    j.trials.set_curve(t.id, [[64, -0.5], [128, -0.25], [192, 0.125]])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "journal.db")], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    status = ok_json(cli(tmp_path, "status", "--json"))
    [running] = status["running"]
    assert running["curve_points"] == 3 and running["latest"] == [192, 0.125]
    assert running["process_alive"] is False
    assert "its process" in one_line(cli(tmp_path, "status"))
    # ...and one whose process (this one) is alive.
    with Journal(tmp_path / "journal.db") as j:
        [s] = j.sessions.list()
        t = j.trials.start(s.id, kind="search", config={}, config_hash=None, delta={},
                          parent_id=None, seed=0, rationale=None, proposer="manual")  # fmt: skip
        j.trials.set_curve(t.id, [[64, 0.5]])
    text = one_line(cli(tmp_path, "status"))
    assert "live: trial #1 is running, 1 curve point, latest: step 64" in text
    assert "mean episode reward 0.5000" in text


def test_train_refuses_a_budget_smaller_than_its_env_copies(tmp_path: Path) -> None:
    result = cli(
        tmp_path, "train", "--data", "synthetic", "--n-envs", "128", "--total-timesteps", "64"
    )
    assert result.exit_code == 2
    assert "total_timesteps 64 is less than n_envs 128" in one_line(result)
    assert "Traceback" not in result.output
