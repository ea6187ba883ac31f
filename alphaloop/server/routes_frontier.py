"""Route of the Mean-CVaR efficient frontier (the same operation as ``alphaloop frontier``)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from alphaloop import ops
from alphaloop.ops.frontier import FrontierRequest

router = APIRouter(prefix="/api", tags=["portfolio"])


@router.get("/frontier", response_model=ops.frontier.FrontierRun)
def frontier(request: Annotated[FrontierRequest, Query()]) -> ops.frontier.FrontierRun:
    """The Mean-CVaR efficient frontier of the first ``assets`` assets, each point certified:
    points from minimum CVaR to the largest return, with their weights. The request is the
    same model ``alphaloop frontier`` reads its flags into. A plain function: the server runs
    it in its pool of threads, so its seconds of solving never hold up the event loop."""
    return ops.frontier.trace_frontier(request)
