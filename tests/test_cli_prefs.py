"""``alphaloop prefs`` and the verdict commands end to end: a short TPE session and a few
decisions with verdicts, pairs extracted (twice: nothing added), stats, the TRL export; every
command prints one JSON document, bad input exits 2."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from scipy.stats import false_discovery_control
from typer.testing import CliRunner

from alphaloop.cli import app
from alphaloop.journal import Journal, TrialKind
from alphaloop.settings import Settings
from alphaloop.validation import sharpe_difference
from tests.flywheel.helpers import add_decision


def run(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


def ok_json(*args: str) -> Any:
    result = run(*args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.mark.slow
def test_prefs_end_to_end(settings: Settings, tmp_path: Path) -> None:
    session = ok_json("research", "max sharpe", "--mode", "cufolio_only", "--budget", "5",
                      "--data", "synthetic", "--noise-seeds", "2", "--proposer", "tpe")  # fmt: skip
    sid = session["session"]["id"] if "session" in session else session["id"]
    dates = pd.bdate_range("2024-01-01", periods=10)
    prices = tmp_path / "p.csv"
    pd.DataFrame(
        {"date": dates.strftime("%Y-%m-%d"), "A": range(100, 110), "B": range(60, 50, -1)}
    ).to_csv(prices, index=False)
    with Journal(settings.journal_path) as journal:
        d1 = add_decision(journal, date="2024-01-03", symbols=["A", "B"], pre=None,
                          target={"A": 0.5, "B": 0.5})  # fmt: skip
        d2 = add_decision(journal, date="2024-01-04", symbols=["A", "B"], pre={"A": 0.5},
                          target={"B": 1.0})  # fmt: skip
    review = ok_json("pm", "review")
    assert [r["id"] for r in review] == [d1, d2]
    assert ok_json("pm", "decide", str(d1), "reject")["verdict"] == "reject"
    bad = run("pm", "decide", str(d2), "override", "--weights", "A=0.8,B=0.4")
    assert bad.exit_code == 2 and "sum to 1.2" in bad.stderr
    assert run("pm", "decide", "99", "approve").exit_code == 2
    decided = ok_json("pm", "decide", str(d2), "override", "--weights", "A=1", "--note", "x")
    assert decided["override_weights"] == {"A": 1.0} and decided["note"] == "x"

    first = ok_json("prefs", "extract", "--data", str(prices))
    assert first["added"]["pm"] == 2 and first["pending"] == []
    with Journal(settings.journal_path) as journal:
        search = journal.trials.of_session(sid, TrialKind.search)
        folds = {
            i: {f.fold: f.returns for f in fs} for i, fs in journal.folds.of_session(sid).items()
        }
        pairs = journal.preferences.list(source="research")
    # An independent count of the research pairs: same parent, and daily returns that differ
    # on the folds both ran, at a false discovery rate of 10% over all such pairs by
    # Benjamini-Yekutieli (scipy's); or one scored, one failed.
    expected, two_sided = 0, []
    for i, a in enumerate(search):
        for b in search[i + 1 :]:
            if a.parent_id != b.parent_id:
                continue
            sa = a.status in ("keep", "discard") and a.objective is not None
            sb = b.status in ("keep", "discard") and b.objective is not None
            if sa and sb:
                shared = sorted(set(folds[a.id]) & set(folds[b.id]))
                x = [r for k in shared for r in folds[a.id][k]]
                y = [r for k in shared for r in folds[b.id][k]]
                p = sharpe_difference(x, y, method="hac").p_value
                two_sided.append(min(1.0, 2 * min(p, 1 - p)))
            elif sa != sb:
                expected += (b if sa else a).status in ("crash", "timeout", "invalid")
    if two_sided:
        expected += int((false_discovery_control(two_sided, method="by") <= 0.10).sum())
    assert first["added"]["research"] == expected == len(pairs)
    for p in pairs:
        assert p.margin > 1.9 or math.isinf(p.margin)  # a z beyond the 5% two-sided bar
        assert "## Goal" in p.prompt and json.loads(p.chosen)["changes"]
    assert ok_json("prefs", "extract", "--data", str(prices))["added"] == {"pm": 0, "research": 0}

    stats = ok_json("prefs", "stats")
    assert stats["total"] == expected + 2
    out = tmp_path / "prefs.jsonl"
    exported = ok_json("prefs", "export", "--out", str(out))
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert exported["rows"] == len(lines) == stats["labelled"]
    assert all(set(x) == {"prompt", "chosen", "rejected"} for x in lines)
    assert ok_json("prefs", "export", "--out", str(out), "--source", "pm")["rows"] <= 2


def test_bad_usage_exits_2(settings: Settings, tmp_path: Path) -> None:
    with Journal(settings.journal_path):
        pass
    bad = run("prefs", "export", "--out", str(tmp_path / "x.jsonl"), "--source", "web")
    assert bad.exit_code == 2 and "unknown source 'web'" in bad.stderr
    # a typo in the folder is refused, as the chart command refuses it, and nothing is created
    typo = run("prefs", "export", "--out", str(tmp_path / "exprots" / "p.jsonl"))
    assert typo.exit_code == 2 and "exprots does not exist" in typo.stderr
    assert not (tmp_path / "exprots").exists()
    assert run("pm", "decide", "1", "maybe").exit_code == 2
    assert run("pm", "decide", "1", "override", "--weights", "A").exit_code == 2
    assert ok_json("pm", "review") == []
    assert ok_json("prefs", "stats")["total"] == 0
