"""alphaloop: goal-driven autoresearch on portfolio strategies."""

from alphaloop.exceptions import AlphaloopError
from alphaloop.knobs import KNOBS, BoundsClip, ConfigDelta, TrialConfig, clip, config_hash

__all__ = [
    "KNOBS",
    "AlphaloopError",
    "BoundsClip",
    "ConfigDelta",
    "TrialConfig",
    "clip",
    "config_hash",
]
__version__ = "0.1.0"
