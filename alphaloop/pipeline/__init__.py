"""The weight-centric pipeline: f_S select -> f_A allocate -> f_T time -> f_R risk overlay.

Each stage is a small class with one pure method; :class:`WeightCentricPipeline` composes them
and :func:`pipeline_for` builds the pipeline of each trial mode. The frozen evaluator's
strategies and the portfolio manager's ticks both run these pipelines, so a backtest and a live
book decide the same weights from the same inputs.
"""

from alphaloop.pipeline.allocate import EqualWeight, MeanCvarAllocator, PpoAllocator, drifted
from alphaloop.pipeline.compose import (
    PipelineMode,
    PipelineRun,
    WeightCentricPipeline,
    pipeline_for,
    run_sequence,
)
from alphaloop.pipeline.overlay import CvarBudgetOverlay, GrossExposure, PositionCap
from alphaloop.pipeline.select import LiquidityVolMomentumFilter, StaticUniverse
from alphaloop.pipeline.state import Day, PipelineState
from alphaloop.pipeline.timing import ConstantTiming, TurbulenceTiming, turbulence

__all__ = [
    "ConstantTiming",
    "CvarBudgetOverlay",
    "Day",
    "EqualWeight",
    "GrossExposure",
    "LiquidityVolMomentumFilter",
    "MeanCvarAllocator",
    "PipelineMode",
    "PipelineRun",
    "PipelineState",
    "PositionCap",
    "PpoAllocator",
    "StaticUniverse",
    "TurbulenceTiming",
    "WeightCentricPipeline",
    "drifted",
    "pipeline_for",
    "run_sequence",
    "turbulence",
]
