"""The walk: the research loop replayed over history, the loop's own out-of-sample record.

At each epoch (yearly by default) a normal research session runs on the data cut at the epoch
(:mod:`.plan`); what it picks trades the period after it, beside the default config and 1/N
(:mod:`.trade`); the periods end to end are the record, tested against both references, with
the edge the record could detect (:mod:`.record`). :mod:`.run` creates, runs and resumes a
walk, with the journal as its only checkpoint.
"""

from alphaloop.walk.events import EpochBegun, EpochTraded, OnWalkEvent, WalkEvent
from alphaloop.walk.plan import Epoch, plan
from alphaloop.walk.record import RULES, record_days, walk_report
from alphaloop.walk.run import create_walk, run_walk
from alphaloop.walk_spec import DEFAULT_RULE, Cadence, PickRule, WalkSpec

__all__ = [
    "DEFAULT_RULE",
    "RULES",
    "Cadence",
    "Epoch",
    "EpochBegun",
    "EpochTraded",
    "OnWalkEvent",
    "PickRule",
    "WalkEvent",
    "WalkSpec",
    "create_walk",
    "plan",
    "record_days",
    "run_walk",
    "walk_report",
]
