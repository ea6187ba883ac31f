"""``alphaloop sessions`` names each session's best as the page does: finalize's pick once it ran
(the default config's baseline when nothing beat it: its score and "default"), the incumbent
before ("so far"); the table, ``--json`` and the page's list agree."""

from __future__ import annotations

import json
from typing import Any

from typer.testing import CliRunner

from alphaloop.cli import app
from alphaloop.journal import FinalReport, Journal
from alphaloop.knobs import TrialConfig, config_hash
from alphaloop.ops.dashboard import session_rows
from alphaloop.settings import Settings
from tests.server.helpers import new_session


def _trial(j: Journal, sid: str, kind: str, objective: float, status: str = "keep") -> Any:
    config = TrialConfig(lookback=7 if kind == "search" else TrialConfig().lookback)
    row = j.trials.start(sid, kind=kind, config=config.model_dump(),
                         config_hash=config_hash(config), delta={"changes": {}},
                         parent_id=None, seed=0, rationale=None, proposer="tpe")  # fmt: skip
    j.trials.finish(row.id, status=status, objective=objective, metrics={"sharpe": objective})
    return row


def test_the_table_json_and_page_name_the_same_best(settings: Settings) -> None:
    settings.home.mkdir(parents=True)
    with Journal(settings.journal_path) as j:
        done = new_session(j, goal="finished, nothing beat the default")
        base = _trial(j, done, "baseline", 0.8747)
        _trial(j, done, "search", 1.0062)  # kept, but not with confidence
        final = FinalReport(stop_reason="budget", n_trials=1, pick="default",
                            baseline_trial_id=base.id)  # fmt: skip
        j.sessions.update(done, status="finished", owner_pid=None, final=final,
                          best_trial_id=base.id)  # fmt: skip
        running = new_session(j, goal="still searching")
        _trial(j, running, "baseline", 0.5)
        kept = _trial(j, running, "search", 0.9)
        _trial(j, running, "search", 1.5, status="discard")
    result = CliRunner().invoke(app, ["sessions"])
    assert result.exit_code == 0, result.output
    text = " ".join(result.stdout.split())
    assert "0.8747 (default)" in text and "0.9000 (#1, so far)" in text
    listed = CliRunner().invoke(app, ["sessions", "--json"])
    best = {r["id"]: r["best"] for r in json.loads(listed.stdout)}
    assert best[done] == {"trial_id": base.id, "idx": base.idx, "kind": "baseline",
                          "objective": 0.8747, "final": True,
                          "sharpe": 0.8747}  # fmt: skip
    assert best[running]["trial_id"] == kept.id and not best[running]["final"]
    page = {r.id: r.best.model_dump() for r in session_rows(settings) if r.best}
    for sid in (done, running):
        assert page[sid] == best[sid]  # one ranking, one tally, for the table and the page
