"""The edit space: the knobs a proposer may change, their bounds, and the clipping rules."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from alphaloop.exceptions import InvalidRequest
from alphaloop.knobs import KNOBS, MODE_GROUPS, BoundsClip, ConfigDelta, Knob
from alphaloop.vocabulary import Mode

# The models a front end builds or shows of the knobs (an edit, a clip), named here so front
# ends never import the knobs themselves (their names: alphaloop.vocabulary).
__all__ = ["CLIP_RULES", "BoundsClip", "ConfigDelta", "KnobInfo", "list_knobs"]

CLIP_RULES = (
    "out-of-bounds values are clipped to the nearest bound; integer knobs are rounded",
    "max_position_pct x n_assets >= 1 (else the cap is raised to 1/n_assets)",
    "(1 - cvar_alpha) x n_scenarios >= 50 tail scenarios (else n_scenarios is raised)",
    "batch_size <= n_steps x n_envs (else batch_size is lowered)",
)


class KnobInfo(BaseModel):
    """One knob as a reader sees it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    group: str
    low: int | float
    high: int | float
    scale: str
    default: int | float
    doc: str
    used_in_modes: list[str]

    @classmethod
    def of(cls, knob: Knob) -> KnobInfo:
        modes = [m for m, groups in MODE_GROUPS.items() if knob.group in groups]
        return cls(**knob.__dict__, used_in_modes=modes)


def list_knobs(names: list[str] | None = None, mode: Mode | None = None) -> list[KnobInfo]:
    """The knobs named (default: all 16, in table order), only those ``mode`` uses if given.

    Raises:
        InvalidRequest: a name is not a knob.
    """
    unknown = [n for n in names or [] if n not in KNOBS]
    if unknown:
        raise InvalidRequest(f"unknown knobs {', '.join(unknown)}; known: {', '.join(KNOBS)}")
    chosen = [KNOBS[n] for n in names] if names else list(KNOBS.values())
    if mode:
        chosen = [k for k in chosen if k.group in MODE_GROUPS[mode]]
    return [KnobInfo.of(k) for k in chosen]
