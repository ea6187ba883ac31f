"""Route of the Mean-CVaR efficient frontier (the same operation as ``alphaloop frontier``)."""

from __future__ import annotations

from fastapi import APIRouter, Query

from alphaloop import ops
from alphaloop.ops.frontier import MAX_POINTS, MAX_SCENARIOS

router = APIRouter(prefix="/api", tags=["portfolio"])


@router.get("/frontier", response_model=ops.FrontierRun)
def frontier(
    assets: int = Query(20, ge=2, description="the first N assets of the embedded S&P 500 set"),
    points: int = Query(20, ge=2, le=MAX_POINTS, description="points on the frontier"),
    scenarios: int | None = Query(
        None, le=MAX_SCENARIOS, description="bootstrapped return scenarios (default 5,000)"
    ),
    seed: int = Query(0, ge=0, le=2**32 - 1, description="seed of the scenario bootstrap"),
) -> ops.FrontierRun:
    """The Mean-CVaR efficient frontier of the first ``assets`` assets, each point certified:
    points from minimum CVaR to the largest return, with their weights. 422 when more assets
    are asked for than the data holds. A plain function: the server runs it in its pool of
    threads, so its seconds of solving never hold up the event loop."""
    given = {"assets": assets, "points": points, "scenarios": scenarios, "seed": seed}
    request = ops.FrontierRequest(**{k: v for k, v in given.items() if v is not None})
    return ops.trace_frontier(request)
