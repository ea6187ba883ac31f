"""The frozen evaluator's version, journaled beside every number it produces.

Part of the frozen evaluator (:mod:`alphaloop.trials`): proposers never edit it. A trial, a
replay or a portfolio decision scored by one version can be compared with another only if the
evaluator gives the same numbers for the same inputs. So any change that moves a number
(accounting, costs, baselines, what a strategy decides, the metric code) bumps this string in
the same commit, and ``tests/trials/test_golden.py`` fails until it does.
"""

from __future__ import annotations

__all__ = ["EVALUATOR_VERSION"]

# "2": PPO trains with NumpyPPO, SB3's algorithm rounded in another order (a default trial's
# daily returns move by up to about 5e-5); Mean-CVaR numbers are those of "1".
# "3": the Sortino ratio of a series with no losing day (a downside deviation under one basis
# point) divides by that basis point, as Calmar does with a drawdown, where it was 0; every other
# number is that of "2".
# "4": every Mean-CVaR solve goes to one solver, HiGHS on the dual LP with each scenario's
# column bounded by its probability (the interior point that took solves of more than 1,024
# distinct scenarios is gone): a default trial's daily returns move by about 1e-15 (the same LP,
# its columns scaled otherwise), those of a trial whose solves have more distinct scenarios (a
# scenario_window over ~1,000 days) by 3e-9 to 3e-6 and a fold's Sharpe by up to 2.5e-5 (the S&P
# 500's three folds at 10,000 scenarios from a 2,000-day window, benchmarks/bench_engines.py):
# the interior point stopped within 2e-8 of the optimum, the simplex ends on it. PPO numbers are
# those of "3".
# "5": the hit rate leaves days with no return out of its denominator (quantstats' win rate):
# on data with holiday rows, or a book flat in cash, it rises; every other number is that of
# "4".
EVALUATOR_VERSION = "5"
