"""Manual PPO runs: journaled as a one-trial session, with a live, capped curve; failures and
interruptions leave the journal consistent."""

from __future__ import annotations

from pathlib import Path

import pytest

from alphaloop.exceptions import AlphaloopError, InvalidRequest
from alphaloop.journal import INTERRUPTED, Journal, downsample_curve
from alphaloop.meta_agent import manual
from alphaloop.meta_agent.manual import ManualRunSpec, planned_timesteps, train_manual
from alphaloop.meta_agent.session import run_session
from alphaloop.settings import Settings
from alphaloop.trials import TrialBudget

KNOBS = {"n_steps": 64, "batch_size": 64, "n_epochs": 3}


def spec(updates: int, **budget: float) -> ManualRunSpec:
    return ManualRunSpec(
        data="synthetic",
        changes=KNOBS,
        trial_budget=TrialBudget(total_timesteps=64 * updates, n_envs=1, **budget),
    )


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(ALPHALOOP_HOME=str(tmp_path / "home"))


def test_a_reader_sees_the_curve_grow_as_an_even_sample(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(manual, "CURVE_WRITE_INTERVAL_S", 0.0)  # journal every update
    updates: list[list[float]] = []
    seen: list[tuple[str, list]] = []
    started: list[int] = []

    def on_update(step: int, reward: float) -> None:
        updates.append([step, reward])
        # A second connection, as another process would open it.
        with Journal(settings.journal_path, create=False) as reader:
            [session] = reader.sessions.list()
            [trial] = reader.trials.of_session(session.id)
        seen.append((trial.status, trial.curve))

    run = train_manual(
        spec(12),
        settings,
        on_start=lambda trial, planned: started.append(planned),
        on_update=on_update,
        max_curve_points=5,
    )
    assert started == [64 * 12] and len(updates) == 12
    for k, (status, curve) in enumerate(seen, start=1):
        assert status == "running"
        assert curve == downsample_curve(updates[:k], 5)
    assert run.trial.curve == downsample_curve(updates, 5)
    assert [p[0] for p in run.trial.curve] == [64, 256, 448, 576, 768]
    assert run.trial.status == "keep" and run.trial.counted and run.trial.reason == "manual run"
    assert run.session.final.best_validation_objective == run.trial.objective
    assert run.session.proposer == "manual" and run.session.budget == 1
    assert run.session.spec.changes == KNOBS


def test_clips_are_journaled(settings: Settings) -> None:
    run = train_manual(
        spec(1).model_copy(update={"changes": {**KNOBS, "learning_rate": 0.5}}), settings
    )
    [clip] = run.clips
    assert (clip.knob, clip.proposed, clip.applied) == ("learning_rate", 0.5, 0.01)
    assert run.trial.config["learning_rate"] == 0.01


def test_planned_timesteps_round_up_to_whole_rollouts() -> None:
    from alphaloop.knobs import TrialConfig

    config = TrialConfig(n_steps=64)
    assert planned_timesteps(config, TrialBudget(total_timesteps=100, n_envs=2)) == 128
    assert planned_timesteps(config, TrialBudget(total_timesteps=128, n_envs=2)) == 128


def test_a_run_past_its_time_limit_is_journaled_as_timeout(settings: Settings) -> None:
    with pytest.raises(AlphaloopError, match="failed: trial ran past its time limit"):
        train_manual(spec(50, time_limit_s=0.01), settings)
    with Journal(settings.journal_path) as j:
        [session] = j.sessions.list()
        [trial] = j.trials.of_session(session.id)
    assert (trial.status, trial.counted) == ("timeout", True)
    assert session.status == "failed" and "time limit" in session.error


def test_an_interrupted_run_is_not_left_running(settings: Settings) -> None:
    def stop(step: int, reward: float) -> None:
        if step >= 128:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train_manual(spec(10), settings, on_update=stop)
    with Journal(settings.journal_path) as j:
        [session] = j.sessions.list()
        [trial] = j.trials.of_session(session.id)
    assert (trial.status, trial.error, trial.counted) == ("crash", INTERRUPTED, False)
    assert session.status == "interrupted"
    assert [p[0] for p in trial.curve] == [64, 128]  # what was trained is kept
    # It is not a research session: resuming it is refused, and changes nothing.
    with pytest.raises(InvalidRequest, match=r"manual training run .* `alphaloop train`"):
        run_session(session.id, settings)
    with Journal(settings.journal_path) as j:
        assert j.sessions.get(session.id) == session and j.trials.of_session(session.id) == [trial]


def test_unknown_symbols_name_the_available_ones(settings: Settings) -> None:
    bad = spec(1).model_copy(update={"symbols": ["AAPL", "A01"]})
    with pytest.raises(InvalidRequest, match=r"unknown symbol.*AAPL; available: A00, A01"):
        train_manual(bad, settings)
    assert not settings.journal_path.exists()
