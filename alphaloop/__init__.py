"""alphaloop: goal-driven autoresearch on portfolio strategies.

Importing the package loads only the knobs. The Gymnasium env ``alphaloop/PortfolioCVaR-v0`` is
registered as soon as gymnasium is imported (now, if it already is): ``import alphaloop`` then
``gymnasium.make("alphaloop/PortfolioCVaR-v0")`` works, while a process that never touches
gymnasium (the command line listing sessions) does not pay ~0.3 s and ~40 MB for it. Registering
needs gymnasium itself, and a package entry point would need packaging metadata; a hook on the
import of gymnasium costs nothing until then.
"""

from types import ModuleType

from alphaloop._lazy import when_imported
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


def _register_env(gymnasium: ModuleType) -> None:
    # By name: gymnasium imports the env's module at the first make(), not now. Importing it
    # here would be a cycle whenever gymnasium's import came from a module the env imports.
    from alphaloop.rl_engine.defaults import ENV_ID

    if ENV_ID not in gymnasium.registry:  # a reload would register it twice, which only warns
        gymnasium.register(id=ENV_ID, entry_point="alphaloop.rl_engine.env:PortfolioEnv")


when_imported("gymnasium", _register_env)
