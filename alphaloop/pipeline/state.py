"""What a pipeline stage sees (:class:`Day`) and what a pipeline carries from one day to the
next (:class:`PipelineState`).

Every stage is a pure function of its inputs: the returns observed before the day it decides,
the day's place in the sequence, and the state it handed back the day before. Randomness enters
only through seeds and the explicit generator state kept here, so a backtest that runs a window
in one loop and a live book that runs one day a process give the same weights.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

__all__ = ["Day", "PipelineState", "generator", "generator_state"]


@dataclass(frozen=True)
class Day:
    """The inputs of one decision.

    Attributes:
        history: (t, N) simple daily returns of every day before the decided day, oldest first;
            row ``t`` (the decided day) is never in it.
        step: days since the sequence began (0 on its first day); rebalance schedules count it.
    """

    history: np.ndarray
    step: int

    @property
    def t(self) -> int:
        """Row index of the decided day in the full return table."""
        return int(self.history.shape[0])


@dataclass(frozen=True)
class PipelineState:
    """What a pipeline hands from one day to the next.

    Attributes:
        step: the next day's place in the sequence.
        target: the target weights set at the latest rebalance (held until the next one).
        stages: each stateful stage's own state by stage name: JSON values only, except keys
            starting with ``_`` (caches that can be rebuilt from the rest, never journaled).
    """

    step: int = 0
    target: tuple[float, ...] | None = None
    stages: Mapping[str, Any] = field(default_factory=dict)

    def advance(self, **changes: Any) -> PipelineState:
        """A copy with ``changes`` and ``step`` moved on by one day."""
        return replace(self, step=self.step + 1, **changes)

    def to_json(self) -> dict[str, Any]:
        """The state as JSON values (caches dropped); :meth:`from_json` reads it back exactly
        (floats round-trip through their shortest repr)."""
        stages = {
            name: (
                {k: v for k, v in value.items() if not k.startswith("_")}
                if isinstance(value, Mapping)
                else value
            )
            for name, value in self.stages.items()
        }
        data = {"step": self.step, "target": list(self.target) if self.target else None}
        data["stages"] = stages
        json.dumps(data)  # fail here, not when journaling, if a stage kept a non-JSON value
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PipelineState:
        target = data.get("target")
        return cls(
            step=int(data["step"]),
            target=tuple(float(x) for x in target) if target else None,
            stages=dict(data.get("stages") or {}),
        )


def generator(state: Mapping[str, Any] | None, seed: int) -> np.random.Generator:
    """A PCG64 generator at ``state``, or freshly seeded with ``seed`` when there is none."""
    rng = np.random.default_rng(seed)
    if state is not None:
        rng.bit_generator.state = dict(state)
    return rng


def generator_state(rng: np.random.Generator) -> dict[str, Any]:
    """The JSON-able state of ``rng`` (its 128-bit integers are plain Python ints)."""
    return dict(rng.bit_generator.state)
