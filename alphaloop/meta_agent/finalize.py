"""The loop's last node: the held-out TEST evaluation of the best config and the baseline, the
deflated Sharpe of the reported trial over the search trials (N and N effective), PBO and the
go/no-go gates, the best policy published to the library (and auto-activated when the
``auto_activate`` rule allows), and the session closed."""

from __future__ import annotations

import math
import shutil
from typing import Any

from alphaloop import library
from alphaloop.exceptions import AlphaloopError
from alphaloop.journal import (
    EventKind,
    FinalReport,
    PolicyRecord,
    PolicySource,
    SessionStatus,
    TrialKind,
    TrialRecord,
    TrialStatus,
)
from alphaloop.knobs import TrialConfig, config_hash
from alphaloop.meta_agent import flight, nodes, test_looks
from alphaloop.meta_agent.events import Finalized
from alphaloop.meta_agent.picking import pick
from alphaloop.meta_agent.recording import finished_trials, is_outcome, violation_of
from alphaloop.meta_agent.state import SessionContext
from alphaloop.metrics import Metrics
from alphaloop.placement import outcome_of
from alphaloop.trials import PURGE_ROWS, max_folds
from alphaloop.validation import DSR_SET, ExcessEvidence, Gates
from alphaloop.validation.pick_rule import PickRule
from alphaloop.validation.report import Selection, gate_report, reference_evidence, selection
from alphaloop.validation.sharpe import probabilistic_sharpe_ratio

ONE_FOLD_NOTE = (
    "one fold: trials were scored on VALIDATION alone, so window noise (how a config fares on "
    "other years) was not measured; the keep rule's paired test covers only its days"
)

# Why a walk's epoch leaves the library alone: an epoch's pick is history, and its gates were
# judged on one period; the ``auto_activate`` rule must never put it on a live book.
NOT_PUBLISHED = "not published: an epoch of a walk trades history, never a live book"


def finalize(ctx: SessionContext) -> None:
    """Evaluates the best config and the baseline once on TEST, computes the deflated Sharpe of
    the best with N = the search trials that produced validation returns, PBO and the gates,
    and closes the session."""
    reason = nodes.stop_reason(ctx) or "finished"
    rows = finished_trials(ctx, series=True)  # the daily returns feed the deflated Sharpe
    base_rows = [t for t in rows if t.kind == TrialKind.baseline and t.status == TrialStatus.keep]
    # A session publishes by the strict rule; the lenient one is what a walk's ``best`` trades.
    rule = PickRule()
    best, why = pick(ctx, rows, rule)
    final: dict[str, Any] = {
        "stop_reason": reason,
        "n_trials": ctx.journal.trials.counted(ctx.session_id),
        "pick": "search" if best is not None else "default",
        "pick_reason": why,
        "pick_rule": rule.rule,
        "pick_level": rule.level if rule.rule == "strict" else None,
        "folds": folds_summary(ctx),
    }
    evaluated = {"default": base_rows[0] if base_rows else None, "search": best}
    tests = _test_rows(ctx, {k: t for k, t in evaluated.items() if t is not None})
    if base_rows:
        base_test = tests["default"]
        final["baseline_trial_id"] = base_rows[0].id
        final["baseline_test"] = base_test.metrics
        final["baseline_test_objective"] = base_test.objective
    if best is not None:
        best_test = tests["search"]
        final["best_trial_id"] = best.id
        final["best_validation_objective"] = best.objective
        final["best_test"] = best_test.metrics
        final["best_test_objective"] = best_test.objective
    chosen = best or (base_rows[0] if base_rows else None)
    final.update(_admissibility(ctx, rows, chosen, best is not None))
    candidate = chosen.val_returns if chosen is not None and chosen.val_returns else None
    chosen_from = selection(candidate, rows)
    if candidate is not None:
        final.update(_sharpe_odds(candidate, chosen_from))
    window = ctx.data.window_dates(ctx.data.test)
    final["test_window"] = window
    looks = {}
    if chosen is not None:
        key = test_looks.pick_key(ctx.spec.mode, chosen.config, chosen.config_hash)
        looks = test_looks.other_looks(
            ctx.journal, ctx.session_id, ctx.data.fingerprint, window, key
        )
    excess = reference_evidence(ctx.data, ctx.spec.trial_budget, tests, looks)
    final["excess"] = {
        ref: e.model_dump(mode="json") if isinstance(e, ExcessEvidence) else {"note": e}
        for ref, e in excess.items()
    }
    gates = ctx.spec.gates.within(ctx.spec.objective.max_drawdown)
    final.update(_overfitting(chosen_from, final, excess, gates))
    if chosen is not None and ctx.spec.publish:
        _publish_policy(ctx, chosen, best, final)
    elif chosen is not None:
        final["policy_note"] = NOT_PUBLISHED
    report = FinalReport.model_validate(final)
    ctx.journal.sessions.update(
        ctx.session_id,
        status=SessionStatus.finished,
        final=report.journaled(),
        best_trial_id=chosen.id if chosen is not None else None,
    )
    ctx.on_event(Finalized(report=report))


def folds_summary(ctx: SessionContext) -> dict[str, Any]:
    """The folds the session scored trials on, and a note saying how much of the history they
    cover (or, for one fold, that it measured no window noise)."""
    windows = [list(ctx.data.window_dates(slice(f.start, f.stop))) for f in ctx.folds]
    n, most = len(ctx.folds), max_folds(ctx.data)
    out: dict[str, Any] = {"n": n, "windows": windows, "purge_days": PURGE_ROWS}
    days = ctx.folds[0].stop - ctx.folds[0].start if ctx.folds else 0
    if n == 1:
        out["note"] = ONE_FOLD_NOTE
    elif n < most:
        out["note"] = f"{n} of the {most} folds of {days} days the history before TEST holds"
    else:
        out["note"] = f"all {n} folds of {days} days the history before TEST holds"
    return out


def _test_rows(ctx: SessionContext, evaluated: dict[str, TrialRecord]) -> dict[str, TrialRecord]:
    """Evaluates each of ``evaluated``'s configs once on TEST (reusing its trained policy), or
    takes the test row a previous, interrupted finalize already wrote. The evaluations are all
    handed to the workers before the first is waited for: with two workers, the default and the
    pick run side by side. Their rows are journaled in the order given."""
    done: dict[int | None, TrialRecord] = {}
    for t in ctx.journal.trials.of_session(ctx.session_id, kind=TrialKind.test):
        if is_outcome(t):
            done.setdefault(t.parent_id, t)
    running = {}
    for key, trial in evaluated.items():
        if trial.id in done:
            continue
        config = TrialConfig(**trial.config)
        row = ctx.journal.trials.start(
            ctx.session_id,
            kind=TrialKind.test,
            config=trial.config,
            config_hash=config_hash(config),
            delta={"changes": {}, "rationale": f"test-window evaluation of trial {trial.idx}"},
            parent_id=trial.id,
            seed=trial.seed,
            rationale="held-out test evaluation",
            proposer="finalize",
            ran_on=ctx.where,
        )
        policy = trial.policy_path
        running[key] = row, flight.submit(ctx, row, config, window="test", policy_path=policy)
    tests = {}
    for key, trial in evaluated.items():
        if key not in running:
            tests[key] = done[trial.id]
            continue
        row, pending = running[key]
        outcome = outcome_of(pending)
        of = "the default" if key == "default" else "the best search trial"
        tests[key] = nodes.finish_outcome(
            ctx, row.id, outcome, nodes.kept_if_ok(outcome), f"TEST of {of}, #{trial.idx}"
        )
    return tests


def _sharpe_odds(candidate: list[float], chosen_from: Selection) -> dict[str, Any]:
    """The reported trial's probabilistic Sharpe, and its deflated Sharpe over the search set
    (N = its size, the variance of its Sharpe ratios as the spread of luck) under N effective
    too, as the final report holds them; None where undefined."""
    psr = probabilistic_sharpe_ratio(candidate)
    dsr = chosen_from.deflated_sharpe
    return {
        "probabilistic_sharpe": None if math.isnan(psr) else psr,
        "dsr_set": DSR_SET,
        "dsr_n_trials": chosen_from.n_search_trials,
        "deflated_sharpe": dsr.dsr if dsr is not None else None,
        "n_effective_trials": dsr.n_effective if dsr is not None else None,
        "deflated_sharpe_effective": dsr.dsr_effective if dsr is not None else None,
    }


def _overfitting(
    chosen_from: Selection,
    final: dict[str, Any],
    excess: dict[str, ExcessEvidence | str],
    gates: Gates,
) -> dict[str, Any]:
    """PBO by CSCV over the search set (its summary, not every combination) and the go/no-go
    gates (the session's, with its drawdown limit as the drawdown gate unless the gates set
    one) on the two TEST tests, the reported trial's TEST metrics, its deflated Sharpe and PBO.

    Stored so it can be read later: a policy that fails a gate must never be activated
    automatically. Stress tests and walk-forward re-run the evaluator and belong to
    ``alphaloop validate``."""
    pbo = chosen_from.pbo
    out: dict[str, Any] = {"pbo": pbo.pbo if pbo is not None else None}
    if pbo is None:
        out["pbo_note"] = chosen_from.pbo_note
    else:
        out["pbo_summary"] = pbo.model_dump(mode="json")
    reported = final.get("best_test") if "best_trial_id" in final else final.get("baseline_test")
    if not reported:
        out["gates_note"] = "no test-window metrics of the reported trial to gate"
        return out
    report = gate_report(Metrics(**reported), chosen_from, gates, excess)
    out["gates"] = report.model_dump(mode="json")
    out["gates_passed"] = report.passed
    out["gates_summary"] = report.summary()
    return out


def _publish_policy(
    ctx: SessionContext, chosen: TrialRecord, best: TrialRecord | None, final: dict[str, Any]
) -> None:
    """Adds the reported trial (the best kept one, else the baseline) to the policy library,
    applies the ``auto_activate`` rule to it, and journals ``PolicyRetrained`` (once, with the
    library id) when the best beat the baseline on TEST.

    A session whose policy cannot be published still finishes; ``final`` says why it was not.
    The ``auto_activate`` rule (see :func:`alphaloop.library.auto_activate`) only ever
    activates an entry whose session passed its go/no-go gates (``final["gates_passed"]``)
    and that beats the active policy on its validation objective by more than the session's
    noise floor.
    """
    reported_test = final.get("best_test") if chosen is best else final.get("baseline_test")
    record, note = library.try_publish(
        ctx.journal,
        ctx.policy_dir,
        session=ctx.journal.sessions.get(ctx.session_id),
        trial=chosen,
        source=PolicySource.session,
        test_metrics=reported_test,
        gates_passed=final.get("gates_passed"),
    )
    if record is None:
        final["policy_note"] = note
        return
    final["policy_id"] = record.id
    if record.path:
        final["policy_path"] = record.path
    _auto_activate(ctx, record, final)
    best_test, base_test = final.get("best_test_objective"), final.get("baseline_test_objective")
    if (
        best is None
        or chosen is not best
        or not best.policy_path
        or best_test is None
        or base_test is None
        or best_test <= base_test
    ):
        return
    target = ctx.session_policy_dir / "best.zip"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(best.policy_path, target)
    final["best_policy_path"] = str(target)
    if not ctx.journal.logs.events(ctx.session_id, kind=EventKind.policy_retrained):
        ctx.journal.logs.add_event(
            ctx.session_id,
            EventKind.policy_retrained,
            {
                "trial_id": best.id,
                "policy_id": record.id,
                "policy_path": str(target),
                "library_path": record.path,
                "sha256": record.sha256,
                "test_objective": best_test,
                "baseline_test_objective": base_test,
            },
        )


def _auto_activate(ctx: SessionContext, record: PolicyRecord, final: dict[str, Any]) -> None:
    """The ``auto_activate`` rule on the new entry, under the settings the session runs with;
    its decision is kept in ``final``."""
    settings = ctx.settings
    if settings is None:
        return
    try:
        decision = library.auto_activate(
            ctx.journal, settings, record, ctx.journal.sessions.get(ctx.session_id).noise_floor
        )
    except AlphaloopError as err:  # a tampered active entry must not fail the session
        final["auto_activation"] = {"activated": False, "reason": str(err)}
        return
    final["auto_activation"] = decision.model_dump(mode="json")


def _admissibility(
    ctx: SessionContext, rows: list[TrialRecord], chosen: TrialRecord | None, is_best: bool
) -> dict[str, Any]:
    """Whether the trial finalize reports (``chosen``: the best kept trial, else the baseline)
    respects the session's limits, and a sentence saying so, for the ``final`` record.

    Without it a session where no trial met ``--max-drawdown`` would present the baseline's
    test figures and deflated Sharpe as "the best" with no word that nothing met the goal.
    """
    objective = ctx.spec.objective
    limits = []
    if objective.max_drawdown is not None:
        limits.append(f"max drawdown <= {objective.max_drawdown:.1%}")
    if objective.max_turnover is not None:
        limits.append(f"annual turnover <= {objective.max_turnover:.2f}")
    broken = violation_of(objective, chosen) if chosen is not None else None
    out: dict[str, Any] = {"admissible": chosen is not None and broken is None}
    if not limits:
        return out
    scored = [
        t
        for t in rows
        if t.kind == TrialKind.search and t.status in (TrialStatus.keep, TrialStatus.discard)
    ]
    within = sum(1 for t in scored if t.metrics and violation_of(objective, t) is None)
    wanted = ", ".join(limits)
    met = f"{within} of {len(scored)} search trials met the limits ({wanted})"
    out["n_admissible"] = within
    if chosen is None:
        out["admissible_reason"] = f"{met}; no trial could be reported"
    elif broken is not None and within and not is_best:
        out["violation"] = broken
        out["admissible_reason"] = (
            f"the default, reported since no search trial beat it with confidence, breaks the "
            f"limits ({broken}): {met}, none of them picked by the pick's test; its figures "
            "are not a result within the limits"
        )
    elif broken is not None:
        out["violation"] = broken
        searched = f"none of {len(scored)} search trials" if within == 0 else met
        out["admissible_reason"] = (
            f"no trial reported meets the limits ({wanted}): {searched}, nor the baseline "
            f"reported instead ({broken}); its figures are not a result within the limits"
        )
    elif is_best:
        out["admissible_reason"] = f"{met}; the best of them is reported"
    else:
        out["admissible_reason"] = (
            f"{met}; none beat the default with confidence, and the default, "
            "reported instead, meets them"
        )
    return out
