"""alphaloop: goal-driven autoresearch on portfolio strategies.

Importing the package loads only the knobs: the Gymnasium env registers itself when
``alphaloop.rl_engine`` is imported (the evaluator and the tests that ``gymnasium.make`` it do).
"""

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
