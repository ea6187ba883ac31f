"""``alphaloop validate`` end to end, and what finalize journals for it: the deflated Sharpe over
the search trials only (recomputed here from the journaled rows), PBO, the gates, the
validation chart, and bad input refused with exit 2."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from alphaloop.cli import app
from alphaloop.journal import Journal
from alphaloop.market import market_of
from alphaloop.metrics import Metrics
from alphaloop.settings import Settings, get_settings
from alphaloop.spec import DataSpec
from alphaloop.validation import (
    Gates,
    benjamini_hochberg,
    cscv_pbo,
    evaluate_gates,
    excess_evidence,
    sharpe_difference,
)
from alphaloop.validation.sharpe import (
    deflated_sharpe,
    effective_trials,
    expected_max_sharpe,
    probabilistic_sharpe_ratio,
    trial_sharpes,
)

SESSION = ["research", "maximise Sharpe", "--mode", "cufolio_only", "--data", "synthetic"]
SESSION += ["--noise-seeds", "2", "--proposer", "random", "--seed", "3", "--json"]


def run_cli(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


def said(panel: str) -> str:
    """A panel's words with its borders and line wraps taken out."""
    return " ".join(panel.replace("\u2502", " ").split())


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("validate") / "home"


@pytest.fixture
def settings(home: Path, clean_env: pytest.MonkeyPatch) -> Settings:
    clean_env.setenv("ALPHALOOP_HOME", str(home))
    return get_settings()


@pytest.fixture
def session(settings: Settings) -> str:
    with_sessions = settings.journal_path.exists()
    if with_sessions:
        with Journal(settings.journal_path) as j:
            found = [s.id for s in j.sessions.list() if s.budget == 6]
        if found:
            return found[0]
    result = run_cli(*SESSION, "--budget", "6")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["session"]["id"]


def test_research_ends_on_the_leaderboard_and_the_result(settings: Settings) -> None:
    human = run_cli(*[a for a in SESSION if a != "--json"], "--budget", "1", "--seed", "4")
    assert human.exit_code == 0, human.output
    with Journal(settings.journal_path) as j:
        [sid] = [s.id for s in j.sessions.list() if s.budget == 1 and s.seed == 4]
    tail = human.stdout.split("leaderboard (validation)", 1)[1]
    assert "go/no-go gates" in tail and f"every trial: `alphaloop journal {sid}`" in tail
    assert "every trial\n" not in human.stdout  # listed by `journal`, not here
    assert "every trial\n" in run_cli("journal", sid).stdout


def test_finalize_deflates_over_the_search_trials_only(settings: Settings, session: str) -> None:
    with Journal(settings.journal_path) as j:
        s, rows = j.sessions.get(session), j.trials.of_session(session)
    final = s.final.journaled()
    search = [t for t in rows if t.kind == "search" and t.status in ("keep", "discard")]
    chosen = next(t for t in rows if t.id == (final.get("best_trial_id") or s.best_trial_id))
    matrix = np.column_stack([t.val_returns for t in search])
    sharpes = trial_sharpes(matrix)
    oracle = deflated_sharpe(chosen.val_returns, sharpes, len(search), effective_trials(matrix))
    assert (final["dsr_set"], final["dsr_n_trials"]) == (
        "search trials with validation returns",
        len(search),
    )
    assert final["deflated_sharpe"] == pytest.approx(oracle.dsr, rel=1e-12)
    assert final["n_effective_trials"] == pytest.approx(oracle.n_effective, rel=1e-12)
    assert final["deflated_sharpe_effective"] == pytest.approx(oracle.dsr_effective, rel=1e-12)
    everything = np.column_stack([t.val_returns for t in rows if t.kind in ("search", "baseline")])
    variance = float(np.var(trial_sharpes(everything), ddof=1))
    with_baselines = probabilistic_sharpe_ratio(
        chosen.val_returns, expected_max_sharpe(len(search), variance)
    )
    assert final["deflated_sharpe"] != pytest.approx(with_baselines, rel=1e-6)
    pbo = cscv_pbo(matrix, 16)
    assert final["pbo"] == pbo.pbo and final["pbo_summary"]["n_combinations"] == 12870
    assert sum(final["pbo_summary"]["histogram_counts"]) == 12870
    reported = final["best_test"] if "best_trial_id" in final else final["baseline_test"]
    excess = excess_oracle(rows, chosen)
    gates = evaluate_gates(Metrics(**reported), oracle.dsr, pbo.pbo, excess=excess)
    assert final["gates_passed"] is gates.passed
    for got, want in zip(final["gates"]["results"], gates.results, strict=True):
        assert {**got, "value": None, "reason": None} == {
            **want.model_dump(mode="json"),
            "value": None,
            "reason": None,
        }
        assert got["value"] == (want.value and pytest.approx(want.value, rel=1e-9, abs=1e-12))
    # The two TEST tests decide first; nothing on TEST is deflated by the configs tried.
    assert [r["gate"] for r in final["gates"]["results"]][:2] == [
        "beats_default",
        "beats_equal_weight",
    ]
    assert not any("dsr" in r["gate"] for r in final["gates"]["results"][:2])
    assert all("deflated" not in e for e in final["excess"].values())


def excess_oracle(rows: list[Any], chosen: Any) -> dict[str, Any]:
    """The pick's TEST evidence against the default and 1/N, rebuilt from the journaled rows
    and a 1/N book simulated here: equal weights, rebalanced every 21 days at the open, paying
    10 bps of the equity per unit of one-way turnover."""
    data = market_of(DataSpec(data="synthetic"))
    tests = {t.parent_id: t for t in rows if t.kind == "test"}
    baseline = next(t for t in rows if t.kind == "baseline")
    r = data.returns[data.test]
    w, ew_test = np.full(r.shape[1], 1 / r.shape[1]), []
    for day, row in enumerate(r):
        cost = 0.0
        if day and day % 21 == 0:
            target = np.full(r.shape[1], 1 / r.shape[1])
            cost, w = np.abs(target - w).sum() * 10e-4, target
        gross = float(w @ row)
        ew_test.append((1 - cost) * (1 + gross) - 1)
        w = w * (1 + row) / (1 + gross)
    pick = tests[chosen.id].val_returns
    out: dict[str, Any] = {}
    if chosen.kind == "baseline":
        out["default"] = "the pick is the default config: no search trial beat it on the folds"
    else:
        out["default"] = excess_evidence("default", pick, tests[baseline.id].val_returns)
    out["equal_weight"] = excess_evidence("equal_weight", pick, ew_test)
    return out


def test_validate_json_is_one_document_and_journaled(settings: Settings, session: str) -> None:
    result = run_cli("validate", session, "--json", "--windows", "3", "--gate", "max_pbo=off")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)  # exactly one JSON document
    assert report["session_id"] == session and report["n_search_trials"] >= 2
    assert report["dsr_set"] == "search trials with validation returns"
    for key in ("deflated_sharpe", "pbo", "walk_forward", "stress", "gates", "elapsed_s"):
        assert key in report
    with Journal(settings.journal_path) as j:
        final = j.sessions.get(session).final.journaled()
    assert report["deflated_sharpe"]["dsr"] == pytest.approx(final["deflated_sharpe"])
    assert report["pbo"]["pbo"] == final["pbo"]
    assert [g["gate"] for g in report["gates"]["results"]] == [
        "beats_default",
        "beats_equal_weight",
        "sharpe",
        "max_drawdown",
        "hit_rate",
        "profit_factor",
        "deflated_sharpe",
        "walk_forward",
    ]
    wf = report["walk_forward"]
    assert len(wf["windows"]) == 6 and all("net" not in w for w in wf["windows"])
    assert all(w["train_end"] < w["eval_start"] for w in wf["windows"])
    # Walk-forward scores only days no search scored: from the start of TEST.
    data = market_of(DataSpec(data="synthetic"))
    first_unseen = data.window_dates(data.test)[0]
    assert report["unseen_start"] == first_unseen and report["walk_forward_note"] is None
    assert report["unseen_days"] == data.test.stop - data.test.start
    assert min(w["eval_start"] for w in wf["windows"]) == first_unseen
    assert {c["scenario"] for c in report["stress"]["cases"]} >= {"base", "cost_x1.5"}
    assert all("equal_weight" in c["metrics"] for c in report["stress"]["cases"])
    review = json.loads(run_cli("journal", session, "--json").stdout)
    assert review["validation"] == report
    # Which configs beat the default on the folds' days: BH at 10% over every search config.
    with Journal(settings.journal_path) as j:
        rows = j.trials.of_session(session)
    search = [t for t in rows if t.kind == "search" and t.status in ("keep", "discard")]
    base = np.mean([t.val_returns for t in rows if t.kind == "baseline"], axis=0)
    p = [
        sharpe_difference(
            t.val_returns, base[len(base) - len(t.val_returns) :], method="hac"
        ).p_value
        for t in search
    ]
    m = report["multiplicity"]
    assert [c["trial"] for c in m["configs"]] == [t.idx for t in search]
    assert [c["p_value"] for c in m["configs"]] == pytest.approx(p, rel=1e-9)
    assert m["beat_default_fdr"] == [
        t.idx for t, r in zip(search, benjamini_hochberg(p, 0.10), strict=True) if r
    ]
    human = run_cli("journal", session)
    assert "deflated Sharpe ratio" in human.stdout and "go/no-go gates" in human.stdout
    assert "configs that beat the default at 10% FDR (Benjamini-Hochberg)" in said(human.stdout)
    unseen = f"unseen data (no search scored it): {first_unseen} on, {report['unseen_days']:,}"
    assert unseen in said(human.stdout)


def test_validate_judges_the_drawdown_against_the_sessions_limit(settings: Settings) -> None:
    limited = run_cli(*SESSION, "--budget", "2", "--seed", "5", "--max-drawdown", "0.2")
    assert limited.exit_code == 0, limited.output
    sid = json.loads(limited.stdout)["session"]["id"]

    def drawdown_gate(*args: str) -> dict[str, Any]:
        report = json.loads(run_cli("validate", sid, "--json", "--windows", "2", *args).stdout)
        return next(g for g in report["gates"]["results"] if g["gate"] == "max_drawdown")

    with Journal(settings.journal_path) as j:
        final = j.sessions.get(sid).final.journaled()
    [at_finalize] = [g for g in final["gates"]["results"] if g["gate"] == "max_drawdown"]
    assert drawdown_gate()["threshold"] == at_finalize["threshold"] == 0.2
    assert drawdown_gate("--gate", "max_drawdown=0.5")["threshold"] == 0.5


@pytest.mark.parametrize("blocks", ["3", "0"])
def test_an_odd_block_count_is_refused_by_its_flag(settings: Settings, blocks: str) -> None:
    refused = run_cli("validate", "s-20000101-000000-abcd", "--blocks", blocks)
    assert refused.exit_code == 2 and "--blocks: Input should be" in refused.stderr


def test_too_little_unseen_data_is_said_and_fails_the_gate(
    settings: Settings, session: str
) -> None:
    # 300 unseen days cannot hold 20 windows of 21: walk-forward is left out, and says why.
    result = run_cli("validate", session, "--json", "--windows", "20")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["walk_forward"] is None
    assert report["walk_forward_note"].startswith("not enough unseen data: 20 walk-forward")
    human = run_cli("validate", session, "--windows", "20").stdout
    assert "walk-forward: not enough unseen data: 20 walk-forward" in said(human)
    [gate] = [g for g in report["gates"]["results"] if g["gate"] == "walk_forward"]
    assert not gate["passed"] and "not enough unseen data" in gate["reason"]
    assert not report["gates"]["passed"]


def test_oos_start_moves_walk_forward_and_refuses_scored_days(
    settings: Settings, session: str
) -> None:
    data = market_of(DataSpec(data="synthetic"))
    later = data.window_dates(slice(data.test.start + 150, data.test.start + 151))[0]
    result = run_cli("validate", session, "--json", "--windows", "2", "--oos-start", later)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["unseen_start"] == later
    assert min(w["eval_start"] for w in report["walk_forward"]["windows"]) == later
    scored = data.window_dates(data.val)[0]
    refused = run_cli("validate", session, "--json", "--oos-start", scored)
    assert refused.exit_code == 2 and refused.stdout == ""
    assert "falls on days the search scored" in refused.stderr


def test_the_validation_chart_builds_reads_and_exports(
    settings: Settings, session: str, tmp_path: Path
) -> None:
    out = tmp_path / "validation.html"
    result = run_cli(
        "chart", "validation", "--session", session, "--out", str(out), "--interpret", "--json"
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["kind"] == "validation" and out.is_file() and out.stat().st_size > 1000
    names = {t["name"] for t in doc["traces"]}
    assert "PBO logits" in names and "equal weight Sharpe" in names
    bullets = doc["read"]["bullets"]
    assert 4 <= len(bullets) <= 6 and bullets[0].startswith("PBO ")


def test_gates_fail_and_pass_on_a_hand_built_case() -> None:
    good = Metrics(
        sharpe=1.2, sortino=1.5, calmar=1.0, max_drawdown=0.1, cvar_95=0.02, volatility=0.1,
        annual_return=0.12, total_return=0.4, annual_turnover=2.0, hit_rate=0.55,
        profit_factor=1.3, n_days=500,
    )  # fmt: skip
    absolute = Gates(max_excess_p_value=None, max_pbo=0.5)  # PBO a gate when asked for
    assert evaluate_gates(good, 0.97, 0.2, absolute).passed
    bad = evaluate_gates(good.model_copy(update={"max_drawdown": 0.35}), 0.97, 0.6, absolute)
    assert [r.gate for r in bad.failed] == ["max_drawdown", "pbo"]
    lenient = absolute.model_copy(update={"min_deflated_sharpe": None, "max_pbo": None})
    assert evaluate_gates(good, 0.9, 0.6, lenient).passed
    # With no evidence against the default and 1/N, a strategy good on its own is no GO.
    alone = evaluate_gates(good, 0.97, 0.2)
    assert not alone.passed and alone.summary().startswith(
        "NO-GO: beats_default failed (not computed), beats_equal_weight failed (not computed)"
    )


def test_bad_input_exits_2(settings: Settings, session: str) -> None:
    unknown = run_cli("validate", "s-nope", "--json")
    assert unknown.exit_code == 2 and "no session 's-nope'" in unknown.stderr
    bad_gate = run_cli("validate", session, "--gate", "min_sharpe=high")
    assert bad_gate.exit_code == 2 and "--gate min_sharpe" in bad_gate.stderr
    one = run_cli(*SESSION, "--budget", "1")
    assert one.exit_code == 0, one.output
    sid = json.loads(one.stdout)["session"]["id"]
    few = run_cli("validate", sid, "--json")
    assert few.exit_code == 2 and few.stdout == ""
    assert "PBO needs at least 2 trials" in few.stderr
