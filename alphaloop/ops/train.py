"""Manual PPO training: one run outside any research session, journaled like a session, added
to the policy library, and traced as a ``train.manual`` span."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from alphaloop import telemetry
from alphaloop.exceptions import InvalidRequest
from alphaloop.ops.requests import TrainRequest, declared_by, first_error
from alphaloop.settings import Settings
from alphaloop.spec import ManualRunSpec, TrialBudget

if TYPE_CHECKING:
    from alphaloop.meta_agent.manual import ManualRun


def train(
    spec: ManualRunSpec,
    settings: Settings,
    *,
    on_start: Callable[[Any, int], None] | None = None,
    on_update: Callable[[int, float], None] | None = None,
) -> ManualRun:
    """Trains PPO once and scores it on the validation window; the run is journaled as a
    session of one trial, its reward curve written as it trains.

    Args:
        spec: data, knob changes, seed, metric and budget.
        settings: the alphaloop home.
        on_start: told ``(trial, planned env steps)`` when training starts.
        on_update: told ``(env steps so far, mean episode reward)`` as it trains.

    Raises:
        InvalidRequest: the data cannot be loaded.
        AlphaloopError: training or evaluation failed (the crashed trial is journaled).
    """
    from alphaloop.meta_agent.manual import train_manual

    budget = spec.trial_budget
    attributes = {
        "alphaloop.data": spec.data,
        "alphaloop.seed": spec.seed,
        "alphaloop.metric": spec.metric,
        "alphaloop.total_timesteps": budget.total_timesteps,
        "alphaloop.n_envs": budget.n_envs,
        "alphaloop.advantage": budget.advantage,
    }
    with telemetry.span("train.manual", attributes) as current:
        run = train_manual(spec, settings, on_start=on_start, on_update=on_update)
        telemetry.set_attributes(
            current,
            {
                "alphaloop.session_id": run.session.id,
                "alphaloop.trial_id": run.trial.id,
                "alphaloop.objective": run.trial.objective,
                "alphaloop.env_steps": run.trial.env_steps,
                "alphaloop.policy_id": run.session.final.policy_id if run.session.final else None,
            },
        )
    return run


def manual_spec(request: TrainRequest) -> ManualRunSpec:
    """The manual run a train request asks for (what its session is journaled with), checked
    whole: its ``knobs`` are the run's changes, its training fields the trial budget's (those
    left None take the budget's defaults).

    Raises:
        InvalidRequest: a rule across the trial budget's fields (``stop_properly`` without
            ``truncate_drawdown``, fewer env steps than envs), named as the request's own
            errors are.
    """
    try:
        return ManualRunSpec(
            **declared_by(ManualRunSpec, request),
            changes=dict(request.knobs),
            trial_budget=TrialBudget(**declared_by(TrialBudget, request, given=True)),
        )
    except ValidationError as err:
        raise InvalidRequest(first_error(err)) from None
