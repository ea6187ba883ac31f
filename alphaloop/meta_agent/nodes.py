"""The research loop's nodes (verbs) and router. Each node reads the journal, does one thing, and
writes its result to the journal before returning, so a kill between any two nodes loses at
most the node in flight."""

from __future__ import annotations

import math
import shutil
import statistics
import traceback
from typing import Any

import numpy as np
from langgraph.runtime import Runtime

from alphaloop.exceptions import AlphaloopError, TrialCrashed, TrialTimeout
from alphaloop.journal import MAX_CURVE_POINTS, Journal, TrialRecord
from alphaloop.knobs import BoundsClip, ConfigDelta, TrialConfig, clip, config_hash
from alphaloop.meta_agent.proposers import ProposalContext, TrialView
from alphaloop.meta_agent.state import SessionContext, SessionState
from alphaloop.metrics import Metrics, deflated_sharpe_ratio, probabilistic_sharpe_ratio
from alphaloop.trials import TrialResult
from alphaloop.trials import run_trial as evaluate

FINISHED = ("keep", "discard", "crash", "timeout", "invalid")
TRACEBACK_TAIL = 2000


# --- reading the journal -------------------------------------------------------------------


def _finished(
    ctx: SessionContext, kinds: tuple[str, ...] = ("baseline", "search"), *, series: bool = False
) -> list[TrialRecord]:
    """Trials of ``kinds`` with an outcome. Interrupted rows are no outcome and are left out:
    counted as done, a baseline seed killed mid-trial would never run again (shrinking the noise
    floor), and a resumed proposer would see a history an uninterrupted session never had.

    Without ``series`` the per-day series are not read (see ``Journal.trials``): every step of
    the loop reads the whole history, and only finalize needs the daily returns."""
    return [
        t
        for t in ctx.journal.trials(ctx.session_id, series=series)
        if t.kind in kinds and t.status in FINISHED and not t.interrupted
    ]


def best_so_far(rows: list[TrialRecord]) -> tuple[TrialRecord | None, float | None]:
    """The incumbent among finished ``rows``: the best kept search trial, else the first baseline
    with the baseline mean.

    The baseline mean (not its luckiest seed) is the bar the first search trial must clear.
    """
    kept = [
        t for t in rows if t.kind == "search" and t.status == "keep" and t.objective is not None
    ]
    if kept:
        best = max(kept, key=lambda t: (t.objective, -t.idx))
        return best, best.objective
    base = [t for t in rows if t.kind == "baseline" and t.objective is not None]
    if not base:
        return None, None
    return base[0], statistics.fmean(t.objective for t in base)


def proposal_context(ctx: SessionContext, rows: list[TrialRecord] | None = None) -> ProposalContext:
    """What the proposer may see: validation results of baseline and search trials only.

    ``rows`` are the finished trials when the caller has just read them.
    """
    rows = _finished(ctx) if rows is None else rows
    clips_by_trial: dict[int, list[BoundsClip]] = {}
    for c in ctx.journal.session_clips(ctx.session_id):
        clips_by_trial.setdefault(c.trial_id, []).append(c.to_bounds_clip())
    history = []
    for t in rows:
        metrics = dict(t.metrics or {})
        violation = None
        if metrics and t.status in ("keep", "discard"):
            violation = ctx.objective.violation(Metrics(**metrics))
        history.append(
            TrialView(
                idx=t.idx,
                kind=t.kind,
                status=t.status,
                config=TrialConfig(**t.config),
                changes=dict((t.delta or {}).get("changes", {})),
                rationale=t.rationale or "",
                objective=t.objective,
                metrics=metrics,
                reason=t.reason,
                violation=violation,
                error=t.error,
                clips=clips_by_trial.get(t.id, []),
            )
        )
    best, best_obj = best_so_far(rows)
    session = ctx.journal.get_session(ctx.session_id)
    counted = ctx.journal.counted_trials(ctx.session_id)
    return ProposalContext(
        session_id=ctx.session_id,
        goal=ctx.goal,
        objective=ctx.objective,
        mode=ctx.mode,
        n_assets=ctx.data.n_assets,
        budget_total=ctx.budget,
        budget_left=max(ctx.budget - counted, 0),
        noise_floor=session.noise_floor or 0.0,
        best_config=TrialConfig(**best.config) if best else TrialConfig(),
        best_objective=best_obj,
        history=history,
        seed=ctx.seed,
    )


def _policy_dir(ctx: SessionContext):
    return ctx.policy_dir / ctx.session_id


def _run(ctx: SessionContext, row: TrialRecord, config: TrialConfig, **kwargs: Any) -> dict:
    """Runs one trial for a journal row; returns an outcome dict (never raises on trial errors)."""
    try:
        result = evaluate(
            ctx.mode,
            config,
            ctx.data,
            ctx.trial_budget,
            row.seed,
            metric=ctx.objective.metric,
            policy_dir=_policy_dir(ctx),
            **kwargs,
        )
    except TrialTimeout as err:
        return {"status": "timeout", "error": str(err)}
    except Exception as err:  # a failing trial is a journaled crash, and the loop goes on
        message = str(err) if isinstance(err, AlphaloopError) else repr(err)
        return {
            "status": "crash",
            "error": message,
            "traceback_tail": traceback.format_exc()[-TRACEBACK_TAIL:],
        }
    return {"status": "ok", "result": result.model_dump(mode="json")}


def _violation(ctx: SessionContext, row: TrialRecord) -> str | None:
    """The limit ``row``'s metrics break, computed (not read from ``row.violation``) so rows of a
    schema-1 journal, which never had it, are judged too."""
    return ctx.objective.violation(Metrics(**row.metrics)) if row.metrics else None


def _finish(ctx: SessionContext, trial_id: int, outcome: dict, status: str, reason: str | None):
    if outcome["status"] != "ok":
        return ctx.journal.finish_trial(
            trial_id,
            status=outcome["status"],
            error=outcome.get("error"),
            traceback_tail=outcome.get("traceback_tail"),
            reason=reason,
        )
    result = TrialResult(**outcome["result"])
    return record_result(
        ctx.journal,
        trial_id,
        result,
        status=status,
        reason=reason,
        violation=ctx.objective.violation(result.metrics),
    )


def record_result(
    journal: Journal,
    trial_id: int,
    result: TrialResult,
    *,
    status: str,
    reason: str | None,
    max_curve_points: int = MAX_CURVE_POINTS,
    violation: str | None = None,
) -> TrialRecord:
    """Journals what a running trial produced: its PPO training curve (an even sample of at most
    ``max_curve_points`` points, for charts), the env steps PPO actually trained, and its
    finished row with ``violation``, the limit its metrics break (if any)."""
    if result.curve:
        journal.set_curve(trial_id, [list(p) for p in result.curve], max_points=max_curve_points)
    return journal.finish_trial(
        trial_id,
        status=status,
        objective=result.objective,
        metrics=result.metrics.model_dump(),
        baselines={k: v.model_dump() for k, v in result.baselines.items()},
        val_returns=result.daily_returns,
        final_weights=result.final_weights,
        elapsed_s=result.elapsed_s,
        reason=reason,
        policy_path=result.policy_path,
        env_steps=result.timesteps,
        violation=violation,
    )


# --- nodes ---------------------------------------------------------------------------------


def baseline(state: SessionState, runtime: Runtime[SessionContext]) -> dict:
    """Runs the default config with ``noise_seeds`` seeds (skipping any already journaled) and
    sets the noise floor: the standard deviation of their objectives."""
    ctx = runtime.context
    done = {t.seed for t in _finished(ctx, ("baseline",))}
    config = TrialConfig()
    for seed in range(ctx.seed, ctx.seed + ctx.noise_seeds):
        if seed in done:
            continue
        row = ctx.journal.start_trial(
            ctx.session_id,
            kind="baseline",
            config=config.model_dump(),
            config_hash=config_hash(config),
            delta={"changes": {}, "rationale": "baseline"},
            parent_id=None,
            seed=seed,
            rationale="baseline: default config",
            proposer="baseline",
        )
        ctx.on_event("trial_started", {"idx": row.idx, "kind": "baseline"})
        outcome = _run(ctx, row, config)
        status = "keep" if outcome["status"] == "ok" else outcome["status"]
        rec = _finish(ctx, row.id, outcome, status, "baseline")
        ctx.on_event("trial_finished", {"trial": rec})
    objectives = [t.objective for t in _finished(ctx, ("baseline",)) if t.objective is not None]
    if not objectives:
        raise TrialCrashed("every baseline trial failed; see `alphaloop journal` for the errors")
    spread = statistics.stdev(objectives) if len(objectives) > 1 else 0.0
    ctx.journal.update_session(ctx.session_id, noise_floor=spread)
    return {"session_id": ctx.session_id}


def propose(state: SessionState, runtime: Runtime[SessionContext]) -> dict:
    ctx = runtime.context
    rows = _finished(ctx)
    delta = ctx.proposer.propose(proposal_context(ctx, rows))
    name = getattr(ctx.proposer, "last_name", None) or ctx.proposer.name
    best, _ = best_so_far(rows)
    return {
        "proposal": {
            "changes": dict(delta.changes),
            "rationale": delta.rationale,
            "proposer": name,
        },
        "parent_id": best.id if best else None,
        "trial_id": None,
        "outcome": None,
    }


def clip_config(state: SessionState, runtime: Runtime[SessionContext]) -> dict:
    ctx = runtime.context
    parent = ctx.journal.get_trial(state["parent_id"]) if state.get("parent_id") else None
    base = TrialConfig(**parent.config) if parent else TrialConfig()
    delta = ConfigDelta(**{k: state["proposal"][k] for k in ("changes", "rationale")})
    config, clips = clip(base, delta, ctx.data.n_assets, ctx.trial_budget.n_envs)
    return {"config": config.model_dump(), "clips": [c.model_dump() for c in clips]}


def run_trial(state: SessionState, runtime: Runtime[SessionContext]) -> dict:
    ctx = runtime.context
    proposal, config = state["proposal"], TrialConfig(**state["config"])
    row = ctx.journal.start_trial(
        ctx.session_id,
        kind="search",
        config=config.model_dump(),
        config_hash=config_hash(config),
        delta={"changes": proposal["changes"], "rationale": proposal["rationale"]},
        parent_id=state.get("parent_id"),
        seed=ctx.seed,
        rationale=proposal["rationale"],
        proposer=proposal["proposer"],
    )
    clips = [BoundsClip(**c) for c in state.get("clips", [])]
    if clips:
        ctx.journal.add_clips(row.id, clips)
    ctx.on_event(
        "trial_started", {"idx": row.idx, "kind": "search", "proposal": proposal, "clips": clips}
    )
    return {"trial_id": row.id, "outcome": _run(ctx, row, config)}


def record(state: SessionState, runtime: Runtime[SessionContext]) -> dict:
    """Gives the verdict (keep / discard, or the crash) and journals it. Idempotent: a trial
    already finished (a resumed session replaying this node) is left as it is."""
    ctx = runtime.context
    trial_id, outcome = state["trial_id"], state["outcome"]
    row = ctx.journal.get_trial(trial_id)
    if row.status != "running":
        return {"proposal": None, "outcome": None}
    status, reason = outcome["status"], None
    if status == "ok":
        metrics = Metrics(**outcome["result"]["metrics"])
        objective = outcome["result"]["objective"]
        incumbent, best_obj = best_so_far(_finished(ctx))
        floor = ctx.journal.get_session(ctx.session_id).noise_floor or 0.0
        violation = ctx.objective.violation(metrics)
        # A baseline that breaks the limits is no bar for a trial that respects them: otherwise
        # every admissible trial scoring below it would be discarded, and the session would end
        # reporting the violating baseline as its best.
        base_breaks = (
            _violation(ctx, incumbent)
            if incumbent is not None and incumbent.kind == "baseline"
            else None
        )
        if violation:
            status, reason = "discard", violation
        elif base_breaks:
            status = "keep"
            reason = f"first trial within the limits; the baseline breaks them ({base_breaks})"
        elif best_obj is None or objective > best_obj + 2 * floor:
            status = "keep"
            reason = (
                (
                    f"{objective:.4f} beats best {best_obj:.4f} by more than 2 x noise floor "
                    f"{floor:.4f}"
                )
                if best_obj is not None
                else "first valid trial"
            )
        else:
            status = "discard"
            reason = (
                f"{objective:.4f} does not beat best {best_obj:.4f} by more than "
                f"2 x noise floor {floor:.4f}"
            )
    rec = _finish(ctx, trial_id, outcome, status, reason)
    ctx.on_event("trial_finished", {"trial": rec})
    return {"proposal": None, "outcome": None}


def stop_reason(ctx: SessionContext) -> str | None:
    """Why the loop must stop now, or None to go on."""
    if ctx.journal.counted_trials(ctx.session_id) >= ctx.budget:
        return f"trial budget of {ctx.budget} reached"
    if ctx.journal.stop_requested(ctx.session_id):
        return "stop requested"
    if ctx.time_budget_s is not None:
        if ctx.journal.trial_seconds(ctx.session_id) >= ctx.time_budget_s:
            return f"time budget of {ctx.time_budget_s:g} s reached"
    if ctx.max_tokens_total is not None and ctx.tokens_used() >= ctx.max_tokens_total:
        return f"LLM token budget of {ctx.max_tokens_total} reached"
    return None


def route_next(state: SessionState, runtime: Runtime[SessionContext]) -> str:
    return "finalize" if stop_reason(runtime.context) else "propose"


def route_after_clip(state: SessionState, runtime: Runtime[SessionContext]) -> str:
    """A stop requested while the proposer was thinking (an LLM can take minutes) ends the
    session before another trial starts. Only the stop flag is checked here: budgets cannot
    have changed since ``route_next``, and tokens already spent on this proposal are worth its
    trial."""
    ctx = runtime.context
    return "finalize" if ctx.journal.stop_requested(ctx.session_id) else "run_trial"


def _test_row(ctx: SessionContext, evaluated: TrialRecord) -> TrialRecord:
    """Evaluates ``evaluated``'s config once on TEST (reusing its trained policy), or returns the
    test row a previous, interrupted finalize already wrote."""
    for t in ctx.journal.trials(ctx.session_id, kind="test"):
        if t.parent_id == evaluated.id and t.status in FINISHED and not t.interrupted:
            return t
    config = TrialConfig(**evaluated.config)
    row = ctx.journal.start_trial(
        ctx.session_id,
        kind="test",
        config=evaluated.config,
        config_hash=config_hash(config),
        delta={"changes": {}, "rationale": f"test-window evaluation of trial {evaluated.idx}"},
        parent_id=evaluated.id,
        seed=evaluated.seed,
        rationale="held-out test evaluation",
        proposer="finalize",
    )
    kwargs = {"window": "test"}
    if evaluated.policy_path:
        kwargs["policy_path"] = evaluated.policy_path
    outcome = _run(ctx, row, config, **kwargs)
    status = "keep" if outcome["status"] == "ok" else outcome["status"]
    return _finish(ctx, row.id, outcome, status, "test window")


def _admissibility(
    ctx: SessionContext, rows: list[TrialRecord], chosen: TrialRecord | None, is_best: bool
) -> dict[str, Any]:
    """Whether the trial finalize reports (``chosen``: the best kept trial, else the baseline)
    respects the session's limits, and a sentence saying so, for the ``final`` record.

    Without it a session where no trial met ``--max-drawdown`` would present the baseline's
    test figures and deflated Sharpe as "the best" with no word that nothing met the goal.
    """
    objective = ctx.objective
    limits = []
    if objective.max_drawdown is not None:
        limits.append(f"max drawdown <= {objective.max_drawdown:.1%}")
    if objective.max_turnover is not None:
        limits.append(f"annual turnover <= {objective.max_turnover:.2f}")
    broken = _violation(ctx, chosen) if chosen is not None else None
    out: dict[str, Any] = {"admissible": chosen is not None and broken is None}
    if not limits:
        return out
    scored = [t for t in rows if t.kind == "search" and t.status in ("keep", "discard")]
    within = sum(1 for t in scored if t.metrics and _violation(ctx, t) is None)
    wanted = ", ".join(limits)
    met = f"{within} of {len(scored)} search trials met the limits ({wanted})"
    out["n_admissible"] = within
    if chosen is None:
        out["admissible_reason"] = f"{met}; no trial could be reported"
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
            f"{met}; none beat the baseline by more than the noise floor, and the baseline, "
            "reported instead, meets them"
        )
    return out


def finalize(state: SessionState, runtime: Runtime[SessionContext]) -> dict:
    """Evaluates the best config and the baseline once on TEST, computes the deflated Sharpe of
    the best with N = trials run, and closes the session."""
    ctx = runtime.context
    reason = stop_reason(ctx) or "finished"
    rows = _finished(ctx, series=True)  # the daily returns feed the deflated Sharpe
    base_rows = [t for t in rows if t.kind == "baseline" and t.status == "keep"]
    kept = [t for t in rows if t.kind == "search" and t.status == "keep"]
    best = max(kept, key=lambda t: (t.objective, -t.idx)) if kept else None
    final: dict[str, Any] = {
        "stop_reason": reason,
        "n_trials": ctx.journal.counted_trials(ctx.session_id),
    }
    if base_rows:
        base_test = _test_row(ctx, base_rows[0])
        final["baseline_trial_id"] = base_rows[0].id
        final["baseline_test"] = base_test.metrics
        final["baseline_test_objective"] = base_test.objective
    if best is not None:
        best_test = _test_row(ctx, best)
        final["best_trial_id"] = best.id
        final["best_validation_objective"] = best.objective
        final["best_test"] = best_test.metrics
        final["best_test_objective"] = best_test.objective
    chosen = best or (base_rows[0] if base_rows else None)
    final.update(_admissibility(ctx, rows, chosen, best is not None))
    if chosen is not None and chosen.val_returns:
        sharpes = [
            float(np.mean(t.val_returns) / np.std(t.val_returns, ddof=1))
            for t in rows
            if t.val_returns and len(t.val_returns) > 2 and np.std(t.val_returns, ddof=1) > 0
        ]
        n = max(final["n_trials"], 1)
        variance = statistics.variance(sharpes) if len(sharpes) > 1 else 0.0
        dsr = deflated_sharpe_ratio(chosen.val_returns, n, variance)
        final["deflated_sharpe"] = None if math.isnan(dsr) else dsr
        psr = probabilistic_sharpe_ratio(chosen.val_returns)
        final["probabilistic_sharpe"] = None if math.isnan(psr) else psr
    if (
        ctx.mode in ("ppo_only", "unified")
        and best is not None
        and best.policy_path
        and final.get("best_test_objective") is not None
        and final.get("baseline_test_objective") is not None
        and final["best_test_objective"] > final["baseline_test_objective"]
    ):
        target = _policy_dir(ctx) / "best.zip"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(best.policy_path, target)
        final["best_policy_path"] = str(target)
        if not ctx.journal.events(ctx.session_id, kind="PolicyRetrained"):
            ctx.journal.add_event(
                ctx.session_id,
                "PolicyRetrained",
                {
                    "trial_id": best.id,
                    "policy_path": str(target),
                    "test_objective": final["best_test_objective"],
                    "baseline_test_objective": final["baseline_test_objective"],
                },
            )
    ctx.journal.update_session(
        ctx.session_id,
        status="finished",
        final=final,
        best_trial_id=chosen.id if chosen is not None else None,
    )
    ctx.on_event("finalized", final)
    return {"stop_reason": reason}
