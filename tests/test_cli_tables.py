"""Every human table of the command line, read on an 80-column terminal.

Each table is drawn with realistic long values twice: 1,000 columns wide, where nothing wraps,
and 80 wide. At 80 no line may be longer than 80, and every word on the narrow drawing must be
a whole word of the wide one, or the start of one cut visibly with an ellipsis: a word split
across two lines ("finish" / "ed") is neither.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from types import SimpleNamespace as NS
from typing import Any

import pytest
from rich.cells import cell_len
from rich.console import Console

from alphaloop import ops
from alphaloop.cli import dpo as dpo_cli
from alphaloop.cli import feedback as feedback_cli
from alphaloop.cli import policies as policies_cli
from alphaloop.cli import prefs as prefs_cli
from alphaloop.cli import scheduler as scheduler_cli
from alphaloop.cli import trial as trial_cli
from alphaloop.cli import views
from alphaloop.journal import FinalReport
from alphaloop.journal.setup import DataWindows, SessionSetup
from alphaloop.settings import Settings
from alphaloop.spec import Objective
from alphaloop.validation.report import ValidationReport

WIDTH = 80
ELLIPSIS = "\u2026"
BOX = "│┃┏┓┗┛┡┩└┘├┤┬┴┼━─╇╈╋┳┻╭╮╰╯"
PROPOSER = "llm:nvidia/llama-3.3-nemotron-super-49b-v1"
GOAL = "maximise validation Sharpe, keep max drawdown under 15% on the S&P 500 set"
SESSION_ID = "s-20260101-120000-ab12"
METRICS = {
    "sharpe": 1.2345, "sortino": 1.9, "calmar": 0.8, "annual_return": 0.1234,
    "total_return": 0.4567, "volatility": 0.1523, "max_drawdown": -0.1432, "cvar_95": -0.0231,
    "annual_turnover": 4.2, "hit_rate": 0.532, "profit_factor": 1.3, "n_days": 754,
}  # fmt: skip


def _draw(renderable: Any, width: int) -> str:
    console = Console(width=width, file=io.StringIO(), color_system=None, force_terminal=False)
    console.print(renderable)
    return console.file.getvalue()  # type: ignore[attr-defined]


def _words(text: str) -> list[str]:
    return text.translate({ord(c): " " for c in BOX}).split()


def assert_readable_at_80(draw: Callable[[int], str]) -> None:
    """``draw(width)`` returns the drawing at ``width``; checks the 80-column one."""
    narrow, wide = draw(WIDTH), draw(1000)
    too_long = [line for line in narrow.splitlines() if cell_len(line) > WIDTH]
    assert not too_long, f"lines over {WIDTH} columns:\n" + "\n".join(too_long)
    whole = set(_words(wide))
    split = [
        w
        for w in _words(narrow)
        if w not in whole
        and not (w.endswith(ELLIPSIS) and any(x.startswith(w[:-1]) for x in whole))
    ]
    assert not split, f"words split across lines: {split}\n{narrow}"


def _trial(idx: int, status: str, note: str | None = None) -> Any:
    return NS(
        id=idx, idx=idx, kind="search", status=status, objective=1.2345 - idx / 10,
        metrics={"max_drawdown": -0.1432}, proposer=PROPOSER, error=None, violation=None,
        delta={"changes": {"learning_rate": 0.00031, "cufolio_hold_days": 21, "n_steps": 2048}},
        reason=note or "kept: beat the incumbent on the same dates with confidence (p=0.012)",
    )  # fmt: skip


def _clip() -> Any:
    return NS(
        knob="max_position_pct", proposed=0.01, applied=0.05,
        reason="feasibility: max_position_pct * n_assets >= 1, raised to 1/n_assets",
    )  # fmt: skip


GATES = {
    "passed": False,
    "results": [
        {"gate": "beats_default", "passed": False, "value": 0.2, "threshold": 0.05,
         "comparison": "<",
         "reason": "paired t = 0.84 < 1.96 over 754 days: not better than the default config"},
        {"gate": "deflated_sharpe", "passed": True, "value": 0.97, "threshold": 0.95,
         "comparison": ">", "reason": "DSR 0.97 >= 0.95 (N = 40)"},
    ],
}  # fmt: skip
PBO = {
    "pbo": 0.21, "n_blocks": 16, "n_trials": 40, "n_days": 754, "n_combinations": 12870,
    "prob_oos_loss": 0.3, "degradation_slope": -0.4,
    "logit_quantiles": {"q25": -1.2, "q50": 0.3}, "histogram_edges": [-1.0, 0.0, 1.0],
    "histogram_counts": [2, 3],
}  # fmt: skip

FINAL = {
    "stop_reason": "budget", "n_trials": 40, "best_trial_id": 7, "deflated_sharpe": 0.97,
    "deflated_sharpe_effective": 0.98, "n_effective_trials": 12.3, "dsr_set": "search trials",
    "probabilistic_sharpe": 0.99, "pbo": 0.21, "pbo_summary": PBO,
    "best_policy_path": "/home/someone/.alphaloop/policies/ppo-3f9a2b.zip",
    "best_test": METRICS, "baseline_test": METRICS, "gates": GATES,
    "admissible_reason": "max drawdown -14.3% within the -15.0% limit",
}  # fmt: skip

VALIDATION = ValidationReport.read({
    "session_id": SESSION_ID, "mode": "cufolio_only", "trial_id": 9, "trial_idx": 7,
    "reported": "best", "elapsed_s": 9.5, "timings_s": {"stress": 4.0},
    "n_search_trials": 40, "dsr_set": "search trials", "gates_evidence": "walk-forward windows",
    "deflated_sharpe": {"sharpe": 0.08, "n_obs": 754, "skew": -0.2, "kurtosis": 4.1,
                        "psr": 0.99, "n_trials": 40, "sr_variance": 0.001, "hurdle": 0.05,
                        "dsr": 0.97, "dsr_effective": 0.98, "n_effective": 12.3},
    "pbo": PBO,
    "walk_forward": {
        "mode": "cufolio_only", "eval_cost_bps": 10.0,
        "windows": [
            {"scheme": "anchored", "index": i, "train_start": "2005-01-03",
             "train_end": "2016-12-30", "eval_start": "2017-01-03", "eval_end": "2019-12-31",
             "train_days": 3000, "eval_days": 754,
             "metrics": METRICS, "baselines": {"equal_weight": METRICS}}
            for i in range(2)
        ],
        "summaries": [
            {"scheme": "rolling", "mean_sharpe": 1.1, "median_sharpe": 1.0, "worst_sharpe": 0.2,
             "positive_windows": 3, "beat_equal_weight": 3, "n_windows": 4,
             "pooled_sharpe": 1.0, "pooled_max_drawdown": -0.18}
        ],
    },
    "stress": {
        "reference": "equal_weight", "cost_bps": 10.0, "cost_multiplier": 1.5,
        "cases": [
            {"scenario": "cost +50%", "description": "the evaluation cost times 1.5",
             "start": "2017-01-03", "end": "2019-12-31", "cost_bps": 15.0,
             "metrics": {"reported": METRICS, "equal_weight": METRICS, "min_cvar": METRICS}},
            {"scenario": "covid crash", "description": "February to March 2020",
             "start": "2020-02-19", "end": "2020-03-23", "cost_bps": 10.0,
             "metrics": {"reported": METRICS, "equal_weight": METRICS, "min_cvar": METRICS}},
        ]
    },
    "gates": GATES, "unseen_start": "2020-01-02", "unseen_days": 754,
})  # fmt: skip

SESSION = NS(
    id=SESSION_ID, status="interrupted", mode="cufolio_only", proposer=PROPOSER, goal=GOAL,
    budget=100, final=FinalReport(stop_reason="budget", n_trials=40,
    best_validation_objective=1.2345), objective=Objective(metric="sharpe", max_drawdown=0.15),
    noise_floor=0.05, data_source="sp500",
    settings=SessionSetup(data=DataWindows(
        source="sp500", fingerprint="fp", symbols=["AAPL", "MSFT"],
        train=("2005-01-03", "2016-12-30"), validation=("2017-01-03", "2019-12-31"),
        test=("2020-01-02", "2022-12-30"))),
)  # fmt: skip

VIEWS: dict[str, Callable[[], Any]] = {
    "metrics": lambda: views.metrics_table(
        "validation", {"trial": METRICS, "equal weight (1/N)": METRICS, "min CVaR": METRICS}
    ),
    "clips": lambda: views.clips_table([_clip(), _clip()]),
    "trials": lambda: views.trials_table(
        [_trial(1, "finished"), _trial(2, "discard"), _trial(3, "crash", "SolverError(...)")],
        {1: [_clip()]},
        shown={},
    ),
    "trials, short values": lambda: views.trials_table(
        [NS(**{**vars(_trial(1, "keep")), "proposer": "tpe", "delta": {}, "reason": ""})],
        shown={},
    ),
    "final": lambda: views.final_panel(NS(final=FinalReport(**FINAL))),
    "validation": lambda: views.validation_panel(VALIDATION),
    "sessions": lambda: views.sessions_table(
        [SESSION, SESSION],
        {SESSION_ID: 40},
        {SESSION_ID: NS(kind="search", idx=24, objective=1.0062, final=True)},
    ),
    "session header": lambda: views.session_header(SESSION),
    "chart reads": lambda: views.chart_reads_table(
        [
            NS(
                kind="equity",
                model=PROPOSER,
                elapsed_s=1.25,
                bullets=[
                    "the best config beats equal weight after 2018",
                    "drawdowns are shallower",
                ],
            )
        ]
    ),
    "scheduler jobs": lambda: scheduler_cli._jobs_table(
        [
            NS(
                name="prefs_extract",
                cron="0 6 * * 1-5",
                next_run="2026-01-02T06:00:00+00:00",
                last_run=NS(started_at="2026-01-01T06:00:00+00:00", outcome=NS(value="succeeded")),
            )
        ]
    ),
}


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_views_are_readable_at_80_columns(name: str) -> None:
    assert_readable_at_80(lambda width: _draw(VIEWS[name](), width))


def test_the_stress_table_says_which_cases_ran_on_unseen_data() -> None:
    drawn = _draw(views.validation_panel(VALIDATION), 200)
    assert "unseen data (no search scored it): 2020-01-02 on, 754 days" in drawn
    rows = {line.split("│")[2].strip(): line.split("│")[4].strip() for line in drawn.splitlines()
            if line.count("│") > 6 and ".." in line and "20" in line.split("│")[3]}  # fmt: skip
    assert rows == {"cost +50%": "in sample", "covid crash": "unseen"}
    legacy = VALIDATION.model_copy(update={"unseen_start": None, "unseen_days": None})
    assert "in sample" not in _draw(views.validation_panel(legacy), 200)


def test_a_clipped_trial_shows_its_verdict_first_and_its_clips() -> None:
    raced = _trial(1, "discard", "raced out on fold 3 of 3: Sharpe 0.76 vs 1.03")
    table = views.trials_table([raced], {1: [_clip()]}, shown={1: "raced out"})
    [note] = [c.plain for c in table.columns[-1].cells]
    assert (
        note
        == "raced out on fold 3 of 3: Sharpe 0.76 vs 1.03; clipped max_position_pct: 0.01->0.05"
    )


def test_the_table_says_the_shown_status_and_no_raced_out_objective() -> None:
    """The words come from the one mapping (``ops.rows``): the table prints them, and a
    raced-out trial's one-fold score is not in its objective column."""

    def row(i: int, kind: str, status: str) -> Any:
        return NS(**{**vars(_trial(i, status)), "kind": kind, "id": i})

    rows = [row(1, "search", "discard"), row(2, "confirm", "keep"), row(3, "search", "discard")]
    table = views.trials_table(rows, shown={1: "discard", 2: "ran", 3: "raced out"})
    assert [c.plain for c in table.columns[2].cells] == ["discard", "ran", "raced out"]
    objectives = [str(c) for c in table.columns[3].cells]
    assert objectives[2] == "-" and objectives[0] != "-"


def test_the_sessions_list_names_the_pick_with_its_score() -> None:
    picks = [
        NS(kind="search", idx=24, objective=1.0062, final=True),
        NS(kind="baseline", idx=0, objective=0.8747, final=True),  # nothing beat the default
        NS(kind="search", idx=3, objective=0.9, final=False),  # the incumbent, still running
    ]
    drawn = [_draw(views.sessions_table([SESSION], {SESSION_ID: 40}, {SESSION_ID: p}), 200)
             for p in picks]  # fmt: skip
    assert "│ 1.0062 (#24) " in drawn[0]
    assert "│ 0.8747 (default) " in drawn[1]
    assert "│ 0.9000 (#3, so far) " in drawn[2]
    assert "│ -  " in _draw(views.sessions_table([SESSION], {SESSION_ID: 40}, {}), 200)


def test_a_table_too_wide_for_its_words_is_shown_vertically() -> None:
    drawn = _draw(views.sessions_table([SESSION], {SESSION_ID: 40}, {}), WIDTH)
    assert f"id        {SESSION_ID}" in drawn
    assert "mode      cufolio_only" in drawn
    wide = _draw(views.sessions_table([SESSION], {SESSION_ID: 40}, {}), 200)
    assert "┃ id" in wide  # a table still, where it fits


def _run_command(
    monkeypatch: pytest.MonkeyPatch, module: Any, command: Callable[[], None], width: int
) -> str:
    console = Console(width=width, file=io.StringIO(), color_system=None, force_terminal=False)
    monkeypatch.setattr(module, "console", console)
    command()
    return console.file.getvalue()  # type: ignore[attr-defined]


def _fakes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The ops each command reads, answering with realistic rows."""
    run = NS(
        id=12, status="skipped", n_train=None, n_heldout=None, accuracy_before=None,
        accuracy_after=None, started_at="2026-01-01T06:00:00+00:00", error=None,
        reason="only 12 new labelled pairs since the last run; ALPHALOOP_DPO_MIN_PAIRS is 50",
    )  # fmt: skip
    monkeypatch.setattr(ops, "dpo", NS(list_dpo_runs=lambda settings: [run]))
    weights = {"AAPL": 0.2512, "MSFT": 0.2011, "BRK-B": 0.1502, "JPM": 0.1, "XOM": 0.05}
    item = NS(
        id=3, book="main", date="2026-01-02", policy_id=7, pre_weights=weights,
        target_weights={**weights, "AAPL": 0.1},
    )  # fmt: skip
    stats = NS(counts={"decisions": {"labelled": 3, "unlabelled": 1}}, new_since_training=3)
    prefs = NS(review_decisions=lambda settings: [item], preference_stats=lambda settings: stats)
    monkeypatch.setattr(ops, "prefs", prefs)
    policy = NS(
        id=7, kind=NS(value="mean_cvar"), source=NS(value="research"), session_id=SESSION_ID,
        objective=Objective(metric="sharpe"), val_objective=0.9711, val_metrics=METRICS,
        test_metrics=METRICS, gates_passed=False,
    )  # fmt: skip
    monkeypatch.setattr(
        ops,
        "policies",
        NS(
            list_policies=lambda settings: [policy],
            active_policy_id=lambda settings: 7,
            activation_overrides=lambda settings: {7: "paper trial only, gates gave no GO"},
        ),
    )


COMMANDS: dict[str, tuple[Any, Callable[[], None]]] = {
    "dpo runs": (dpo_cli, lambda: dpo_cli.runs(as_json=False)),
    "pm review": (feedback_cli, lambda: feedback_cli.review(as_json=False)),
    "prefs stats": (prefs_cli, lambda: prefs_cli.stats(as_json=False)),
    "policies list": (policies_cli, lambda: policies_cli.list_(as_json=False)),
    "knobs": (trial_cli, lambda: trial_cli.knobs(as_json=False)),
}


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_command_tables_are_readable_at_80_columns(
    name: str, monkeypatch: pytest.MonkeyPatch, settings: Settings
) -> None:
    _fakes(monkeypatch)
    module, command = COMMANDS[name]
    assert_readable_at_80(lambda width: _run_command(monkeypatch, module, command, width))
