"""The frozen evaluator's version, journaled beside every number it produces.

Part of the frozen evaluator (:mod:`alphaloop.trials`): proposers never edit it. A trial, a
replay or a portfolio decision scored by one version can be compared with another only if the
evaluator gives the same numbers for the same inputs. So any change that moves a number
(accounting, costs, baselines, what a strategy decides, the metric code) bumps this string in
the same commit, and ``tests/trials/test_golden.py`` fails until it does.
"""

from __future__ import annotations

__all__ = ["EVALUATOR_VERSION"]

EVALUATOR_VERSION = "1"
