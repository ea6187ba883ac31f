"""A home that moves: every path in the journal and the library is stored relative to the home,
so a copied home (the old one deleted) still validates, replays, ticks and extracts pairs."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from alphaloop.settings import Settings

UNSET = {str(a): None for f in Settings.model_fields.values() for a in f.validation_alias.choices}
WINDOW = ["--start", "2015-01-02", "--end", "2015-06-30"]


def cli(home: str, *args: str) -> Any:
    result = CliRunner().invoke(
        __import__("alphaloop.cli", fromlist=["app"]).app,
        [*args, "--json"],
        env={**UNSET, "ALPHALOOP_HOME": home},
    )
    assert result.exit_code == 0, (args, result.output)
    return json.loads(result.stdout)


@pytest.mark.slow
def test_a_copied_home_works_after_the_old_one_is_deleted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    old = "old-home"  # relative to the working directory, as a user may set it
    research = cli(
        old, "research", "max Sharpe", "--mode", "ppo_only", "--data", "synthetic",
        "--budget", "2", "--noise-seeds", "2", "--proposer", "random",
        "--total-timesteps", "64", "--seed", "3",
    )  # fmt: skip
    sid, policy = research["session"]["id"], research["final"]["policy_id"]
    search = next(t for t in research["trials"] if t["kind"] == "search")
    cli(old, "policies", "activate", str(policy), "--force", "--reason", "relocation test")
    cli(old, "pm", "tick", "--date", "2015-01-05")
    conn = sqlite3.connect(Path(old) / "journal.db")
    stored = [r[0] for r in conn.execute("SELECT policy_path FROM trials")]
    stored += [r[0] for r in conn.execute("SELECT path FROM policies WHERE path IS NOT NULL")]
    conn.close()
    assert stored and all(not Path(p).is_absolute() and p.startswith("policies/") for p in stored)
    new = tmp_path / "elsewhere" / "home"
    shutil.copytree(old, new)
    shutil.rmtree(old)
    home = str(new)
    assert cli(home, "validate", sid)["session_id"] == sid
    replayed = cli(home, "replay", "--trial", f"{sid}:{search['idx']}", *WINDOW)
    assert replayed["n_days"] > 100
    assert cli(home, "replay", "--policy", str(policy), *WINDOW)["n_days"] > 100
    decision = cli(home, "pm", "tick", "--date", "2015-01-06")
    assert decision["status"] == "sent" and decision["policy_id"] == policy
    extracted = cli(home, "prefs", "extract")
    # Research pairs need a paired difference on the folds: two short PPO trials may give none.
    # Whatever the extraction found in the moved journal is what it now holds.
    counts = cli(home, "prefs", "stats")["counts"]
    assert extracted["added"]["research"] == counts.get("research", {}).get("labelled", 0)
