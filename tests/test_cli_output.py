"""The ``alphaloop`` process as a script sees it: one JSON document on stdout with ``--json``
whatever native libraries print, and no files outside the alphaloop home.

These run the real entry point (``python -m alphaloop``) in a subprocess: a test runner's
captured ``sys.stdout`` would hide exactly what they check, the bytes on descriptor 1.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

try:
    from tests import fake_openai as fake
except ImportError:
    import fake_openai as fake  # type: ignore[no-redef]

from alphaloop.settings import Settings

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def short_tmp() -> Iterator[Callable[[], Path]]:
    """Makes folders with short paths: Chromium puts its IPC socket in TMPDIR, and a socket
    path longer than 107 bytes (pytest's ``tmp_path`` nests deep) makes it exit at start."""
    made: list[Path] = []

    def make() -> Path:
        made.append(Path(tempfile.mkdtemp(prefix="al-")))
        return made[-1]

    yield make
    for path in made:
        shutil.rmtree(path, ignore_errors=True)


def sandbox(root: Path) -> dict[str, str]:
    """An environment whose home, temp folder and user folders are fresh folders under ``root``
    (so a test can see every file the command writes) and with no LLM configured."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ALPHALOOP_", "OPENAI_"))}
    for info in Settings.model_fields.values():
        for alias in getattr(info.validation_alias, "choices", ()):
            env.pop(str(alias), None)
    for name in ("home", "user", "tmp"):
        (root / name).mkdir(parents=True, exist_ok=True)
    env.update(
        ALPHALOOP_HOME=str(root / "home"),
        HOME=str(root / "user"),
        TMPDIR=str(root / "tmp"),
        PYTHONPATH=str(REPO),
    )
    for name in ("XDG_CACHE_HOME", "XDG_CONFIG_HOME", "TORCHINDUCTOR_CACHE_DIR"):
        env.pop(name, None)
    return env


def alphaloop(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "alphaloop", *args],
        env=env,
        cwd=env["HOME"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def one_document(proc: subprocess.CompletedProcess[str]) -> Any:
    """The whole of stdout parsed as one JSON document (``json.loads`` refuses anything around
    it: a banner line before it, a second document after it)."""
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


def _stderr_of_guarded(body: str) -> str:
    """``body`` run by a fresh Python on this checkout after ``reserve_stdout()``: its stdout
    must be the one document ``{"ok": true}`` it prints; returns what reached stderr."""
    code = "from alphaloop.cli._stdio import reserve_stdout\nreserve_stdout()\n" + body
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert json.loads(proc.stdout) == {"ok": True}
    return proc.stderr


def test_native_writes_to_descriptor_1_reach_stderr() -> None:
    stderr = _stderr_of_guarded(
        "import os\n"
        "os.write(1, b'native banner\\n')\n"
        "print('{\"ok\": true}')\n"
        "os.system('echo from a child')\n"
    )
    assert "native banner" in stderr and "from a child" in stderr


def test_another_threads_prints_reach_stderr() -> None:
    """A library's own thread printing to ``sys.stdout`` (Ray's driver prints a dead worker's
    ``(raylet)`` message so) reaches stderr; the command's main thread owns stdout."""
    stderr = _stderr_of_guarded(
        "import threading\n"
        "t = threading.Thread(target=lambda: print('(raylet) a worker died', flush=True))\n"
        "t.start(); t.join()\n"
        "print('{\"ok\": true}')\n"
    )
    assert "(raylet) a worker died" in stderr


def test_a_librarys_prints_from_the_main_thread_reach_stderr() -> None:
    """Ray's driver flushes the ``(raylet)`` lines it held back from the main thread at
    ``ray.shutdown``, after the command printed its document: they reach stderr, the command's
    own output (this package's, click's, Rich's) stdout."""
    stderr = _stderr_of_guarded(
        "import click, rich\n"
        "click.echo('{\"ok\":')\n"
        "rich.print('true}')\n"
        "exec(\"print('(raylet) Raylet is terminated', flush=True)\", "
        "{'__name__': 'ray._private.worker'})\n"
    )
    assert "(raylet) Raylet is terminated" in stderr


@pytest.fixture(scope="module")
def finished(short_tmp: Callable[[], Path]) -> tuple[dict[str, str], str]:
    """A home holding one finished one-trial research session."""
    env = sandbox(short_tmp())
    out = one_document(
        alphaloop(env, "research", "max Sharpe", "--budget", "1", "--noise-seeds", "2", "--json")
    )
    return env, out["session"]["id"]


JSON_COMMANDS = [
    ["knobs"],
    ["sessions"],
    ["status"],
    ["status", "{sid}"],
    ["journal", "{sid}"],
    ["trial", "--mode", "cufolio_only"],
    ["chart", "research_progress", "--session", "{sid}", "--out", "{home}/p.png"],
    ["chart", "ratio_curve", "--out", "{home}/c.html"],
]


@pytest.mark.slow
@pytest.mark.parametrize("command", JSON_COMMANDS, ids=" ".join)
def test_every_json_command_prints_exactly_one_document(
    finished: tuple[dict[str, str], str], command: list[str]
) -> None:
    env, sid = finished
    args = [a.format(sid=sid, home=env["ALPHALOOP_HOME"]) for a in command]
    one_document(alphaloop(env, *args, "--json"))


@pytest.mark.slow
@pytest.mark.parametrize("command", ["stop", "resume"])
def test_research_stop_and_resume_print_one_document_or_nothing(
    finished: tuple[dict[str, str], str], command: str
) -> None:
    env, sid = finished
    proc = alphaloop(env, "research", command, sid, "--json")
    if proc.returncode == 0:
        one_document(proc)
    else:  # a finished session is neither stopped nor resumed: the reason goes to stderr only
        assert proc.returncode == 2 and proc.stdout == "" and proc.stderr


@pytest.mark.slow
def test_chat_ask_json_is_one_document(
    finished: tuple[dict[str, str], str], fake_openai: fake.FakeOpenAI
) -> None:
    env, _ = finished
    fake_openai.push(fake.text("Your best trial is the baseline."))
    llm = {
        "ALPHALOOP_LLM_BASE_URL": fake_openai.base_url,
        "ALPHALOOP_LLM_MODEL": fake_openai.models[0],
    }
    out = one_document(alphaloop({**env, **llm}, "chat", "--ask", "best?", "--json"))
    assert out["text"] == "Your best trial is the baseline."


@pytest.mark.slow
def test_human_output_carries_no_solver_banner(short_tmp: Callable[[], Path]) -> None:
    proc = alphaloop(sandbox(short_tmp()), "trial", "--mode", "cufolio_only")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "validation" in proc.stdout
    assert "HiGHS" not in proc.stdout and "Copyright" not in proc.stdout
    assert "HiGHS" not in proc.stderr and "Copyright" not in proc.stderr


@pytest.mark.slow
def test_ppo_runs_and_png_export_write_only_inside_the_home(
    short_tmp: Callable[[], Path],
) -> None:
    """PPO (SB3's logger, torch's inductor cache) and Chromium (its profile folders) each used
    to leave folders in the temp folder or the user's home; the JSON is checked on the way."""
    root = short_tmp()
    env = sandbox(root)
    one_document(
        alphaloop(env, "trial", "--mode", "ppo_only", "--total-timesteps", "256", "--json")
    )
    one_document(
        alphaloop(env, "train", "--total-timesteps", "256", "--symbols", "AAPL,MSFT,JPM", "--json")
    )
    png = Path(env["ALPHALOOP_HOME"]) / "curve.png"
    one_document(alphaloop(env, "chart", "training_curve", "--out", str(png), "--json"))
    assert png.stat().st_size > 0
    for outside in ("tmp", "user"):
        assert sorted(p.name for p in (root / outside).rglob("*")) == [], outside
