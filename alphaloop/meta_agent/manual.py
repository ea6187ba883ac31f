"""Manual PPO runs: one PPO training outside any research session, the "just a baseline" path.

A manual run is journaled as a session of its own (proposer ``manual``, mode ``ppo_only``,
budget 1) holding exactly one ``search`` trial that ends ``keep`` with reason "manual run" and
is counted. So ``alphaloop sessions`` lists it next to research sessions, and reviews, charts
and the cross-run ranking read it like any other trial; the journal needs no new table.

While PPO trains, the reward curve (mean episode reward after each update) is rewritten in the
journal as an even sample of at most :data:`MAX_CURVE_POINTS` points over the whole run so far,
at most every :data:`CURVE_WRITE_INTERVAL_S` seconds, so another process (``alphaloop status``,
a web page) can follow it live. Validation and the baselines are the frozen evaluator's, as for
any trial.
"""

from __future__ import annotations

import math
import os
import time
import traceback
from collections.abc import Callable

from pydantic import BaseModel, ConfigDict

from alphaloop import library
from alphaloop.exceptions import AlphaloopError, TrialTimeout
from alphaloop.journal import (
    INTERRUPTED,
    MAX_CURVE_POINTS,
    ClipRecord,
    Journal,
    PolicySource,
    SessionRecord,
    SessionStatus,
    TrialKind,
    TrialRecord,
    TrialStatus,
)
from alphaloop.knobs import ConfigDelta, TrialConfig, clip, config_hash
from alphaloop.market import MarketData, market_of
from alphaloop.meta_agent.recording import record_result
from alphaloop.placement import TRACEBACK_TAIL
from alphaloop.settings import Settings
from alphaloop.spec import ManualRunSpec
from alphaloop.trials import TrialBudget, TrialResult, run_trial
from alphaloop.vocabulary import MANUAL_PROPOSER

MANUAL_REASON = "manual run"
# A curve write is one small transaction; four a second keep a live view current without
# making a run of thousands of tiny updates wait on the disk.
CURVE_WRITE_INTERVAL_S = 0.25


class ManualRun(BaseModel):
    """A finished manual run as journaled: its session, its one trial and the clips made."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    session: SessionRecord
    trial: TrialRecord
    clips: list[ClipRecord]


def planned_timesteps(config: TrialConfig, budget: TrialBudget) -> int:
    """Env steps the run will take: PPO collects whole rollouts of ``n_steps * n_envs``."""
    rollout = config.n_steps * budget.n_envs
    return math.ceil(budget.total_timesteps / rollout) * rollout


class _CurveWriter:
    """Keeps the whole curve in memory and journals an even sample of it, throttled; each
    point also goes to ``forward`` (the caller's live view)."""

    def __init__(
        self,
        journal: Journal,
        trial_id: int,
        max_points: int,
        forward: Callable[[int, float], None] | None = None,
    ) -> None:
        self.journal, self.trial_id, self.max_points = journal, trial_id, max_points
        self.forward = forward
        self.points: list[list[float]] = []
        self._last_write = -math.inf

    def add(self, timestep: int, reward: float) -> None:
        self.points.append([int(timestep), float(reward)])
        if time.monotonic() - self._last_write >= CURVE_WRITE_INTERVAL_S:
            self.flush()
        if self.forward is not None:
            self.forward(timestep, reward)

    def flush(self) -> None:
        if self.points:
            self.journal.trials.set_curve(self.trial_id, self.points, max_points=self.max_points)
            self._last_write = time.monotonic()


def train_manual(
    spec: ManualRunSpec,
    settings: Settings,
    *,
    on_start: Callable[[TrialRecord, int], None] | None = None,
    on_update: Callable[[int, float], None] | None = None,
    max_curve_points: int = MAX_CURVE_POINTS,
) -> ManualRun:
    """Trains PPO once, evaluates it on validation like any trial, and journals the run.

    Args:
        spec: data, knob edits, seed, metric and PPO budget.
        settings: where the journal and the policies live.
        on_start: called once the trial is journaled, with it and the env steps planned.
        on_update: called with (timestep, mean episode reward) after each PPO update.
        max_curve_points: cap on the journaled curve (an even sample over the whole run).

    Returns:
        The journaled session, trial (with its curve) and clips.

    Raises:
        InvalidRequest: unusable data, e.g. an unknown symbol (the message lists the available
            ones).
        InvalidDelta: an unknown knob or a value that is not a number.
        AlphaloopError: training or evaluation failed (journaled as a crashed trial).
    """
    data = market_of(spec)
    delta = ConfigDelta(changes=spec.changes, rationale=MANUAL_REASON)
    config, clips = clip(TrialConfig(), delta, data.n_assets, spec.trial_budget.n_envs)
    with Journal(settings.journal_path) as journal:
        row = _open_run(journal, spec, data, config, delta)
        clip_rows = journal.logs.add_clips(row.id, clips) if clips else []
        curve = _CurveWriter(journal, row.id, max_curve_points, on_update)
        try:
            if on_start is not None:
                on_start(row, planned_timesteps(config, spec.trial_budget))
            result = run_trial(
                "ppo_only",
                config,
                data,
                spec.trial_budget,
                spec.seed,
                metric=spec.metric,
                policy_dir=settings.policies_dir / row.session_id,
                on_update=curve.add,
            )
        except BaseException as err:
            _journal_failure(journal, row.session_id, row.id, curve, err)
            if isinstance(err, Exception):
                raise AlphaloopError(f"manual run {row.session_id} failed: {err}") from err
            raise
        trial = record_result(
            journal,
            row.id,
            result,
            status=TrialStatus.keep,
            reason=MANUAL_REASON,
            max_curve_points=max_curve_points,
        )
        session = _close_run(journal, settings, trial, result)
        return ManualRun(session=session, trial=trial, clips=clip_rows)


def _close_run(
    journal: Journal, settings: Settings, trial: TrialRecord, result: TrialResult
) -> SessionRecord:
    """Publishes the run's policy to the library (every manual run is an entry a person might
    deploy) and closes its session with its result."""
    entry, note = library.try_publish(
        journal,
        settings.policies_dir,
        session=journal.sessions.get(trial.session_id),
        trial=trial,
        source=PolicySource.manual,
    )
    published = {"policy_id": entry.id} if entry is not None else {"policy_note": note}
    return journal.sessions.update(
        trial.session_id,
        status=SessionStatus.finished,
        best_trial_id=trial.id,
        owner_pid=os.getpid(),
        final={
            "stop_reason": MANUAL_REASON,
            "n_trials": 1,
            "best_trial_id": trial.id,
            "best_validation_objective": result.objective,
            "timesteps": result.timesteps,
            **published,
        },
    )


def _open_run(
    journal: Journal,
    spec: ManualRunSpec,
    data: MarketData,
    config: TrialConfig,
    delta: ConfigDelta,
) -> TrialRecord:
    """Journals the run's session and its one trial, about to train."""
    session_id = journal.sessions.create(
        goal=spec.goal,
        mode="ppo_only",
        objective=spec.objective.model_dump(),
        proposer=MANUAL_PROPOSER,
        budget=1,
        seed=spec.seed,
        data_source=spec.data,
        data_fingerprint=data.fingerprint,
        settings={"spec": spec.model_dump(mode="json"), "data": data.describe()},
        baseline_config=TrialConfig().model_dump(),
    )
    return journal.trials.start(
        session_id,
        kind=TrialKind.search,
        config=config.model_dump(),
        config_hash=config_hash(config),
        delta={"changes": dict(delta.changes), "rationale": MANUAL_REASON},
        parent_id=None,
        seed=spec.seed,
        rationale=MANUAL_REASON,
        proposer=MANUAL_PROPOSER,
    )


def _journal_failure(
    journal: Journal, session_id: str, trial_id: int, curve: _CurveWriter, err: BaseException
) -> None:
    """Records how the run ended so the journal never holds a trial left ``running``."""
    interrupted = not isinstance(err, Exception)  # Ctrl-C, SystemExit
    curve.flush()
    message = str(err) if isinstance(err, AlphaloopError) else repr(err)
    journal.trials.finish(
        trial_id,
        status=TrialStatus.timeout if isinstance(err, TrialTimeout) else TrialStatus.crash,
        error=INTERRUPTED if interrupted else message,
        traceback_tail=None if interrupted else traceback.format_exc()[-TRACEBACK_TAIL:],
        reason=MANUAL_REASON,
    )
    journal.sessions.update(
        session_id,
        status=SessionStatus.interrupted if interrupted else SessionStatus.failed,
        error=message[:500],
    )
