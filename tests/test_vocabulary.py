"""The words a session is described in (``alphaloop.vocabulary``) are the ones the code that
acts on them knows: each mode has its knob groups, each metric is read off a trial's metrics,
each gate has a threshold, each proposer is built, each advantage estimator trains."""

from __future__ import annotations

from typing import get_args

import numpy as np
import pytest

from alphaloop import vocabulary as v
from alphaloop.knobs import MODE_GROUPS
from alphaloop.metrics import compute_metrics, objective_value
from alphaloop.rl_engine.advantages import ADVANTAGE_ESTIMATORS
from alphaloop.validation import Gates


def test_every_mode_has_its_knob_groups() -> None:
    assert tuple(MODE_GROUPS) == v.MODES == get_args(v.Mode)


@pytest.mark.parametrize("metric", v.METRICS)
def test_every_metric_is_read_off_a_trial_s_metrics(metric: str) -> None:
    metrics = compute_metrics(np.array([0.01, -0.02, 0.015, 0.003, -0.001]), np.full(5, 0.1))
    assert isinstance(objective_value(metrics, metric), float)
    assert v.DEFAULT_METRIC in v.METRICS


def test_every_gate_has_a_threshold() -> None:
    assert tuple(Gates.model_fields) == v.GATE_NAMES == get_args(v.GateName)


def test_the_proposer_choices_are_the_proposer_names() -> None:
    assert get_args(v.ProposerChoice) == tuple(p.value for p in v.ProposerName)
    assert v.MANUAL_PROPOSER not in get_args(v.ProposerChoice)  # no session asks for it


def test_every_advantage_estimator_trains() -> None:
    assert get_args(v.Advantage) == ADVANTAGE_ESTIMATORS
