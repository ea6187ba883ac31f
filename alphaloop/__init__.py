"""alphaloop: goal-driven autoresearch on portfolio strategies."""

import alphaloop.rl_engine  # noqa: F401  (registers alphaloop/PortfolioCVaR-v0 with gymnasium)
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
