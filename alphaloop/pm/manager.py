"""One tick of the portfolio manager: decide day D from prices up to D-1, check the kill
switch, send the orders, journal the decision (with the evaluator version it decided under).

The pipeline's sequential state travels from tick to tick in the journal (the ``state`` entry
of each decision's ``stages``): a book's sequence starts at its first tick, and each tick
continues it exactly as a backtest loop would. Orders fill at the last close the decision saw
(the evaluator's "open of day D" in close-to-close data), so a book run over a window with
fractional shares holds the evaluator's weights day for day.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from alphaloop.broker.base import Broker, Execution, client_order_id
from alphaloop.exceptions import Conflict
from alphaloop.journal import Journal
from alphaloop.journal.books import BookRecord, DecisionRecord
from alphaloop.pipeline import PipelineRun, PipelineState, WeightCentricPipeline
from alphaloop.pm.killswitch import KillSwitch, halt_reason
from alphaloop.pm.orders import OrderPlan, weights_to_orders
from alphaloop.portfolio_opt import start_sequence
from alphaloop.trials import EVALUATOR_VERSION

__all__ = ["TickSetup", "already", "equity_at", "settle_pending", "stale_reason", "tick"]

# Business days allowed between the last close and the decided day: 1 is the day before, 2
# lets one exchange holiday pass (the weekday calendar does not know holidays).
MAX_BUSINESS_DAYS = 2


@dataclass(frozen=True)
class TickSetup:
    """What every tick of a book shares: its policy and pipeline, prices and returns, costs
    and limits."""

    policy_id: int | None
    pipeline: WeightCentricPipeline
    prices: pd.DataFrame  # rows dates, columns the policy's symbols
    returns: np.ndarray  # (T, N) returns of prices[1:], row i dated prices.index[i + 1]
    cost_bps: float
    limits: KillSwitch
    min_trade: float
    fractional: bool


def stale_reason(prices: pd.DataFrame, day: pd.Timestamp) -> str | None:
    """Why the closes before ``day`` cannot price a decision for it, or None."""
    before = prices[prices.index < day]
    if before.empty:
        return f"missing prices: the data has no close before {day.date()}"
    last = before.index[-1]
    gap = int(np.busday_count(last.date(), day.date()))
    if gap > MAX_BUSINESS_DAYS:
        return (
            f"stale prices: the last close is {last.date()}, {gap} business days before "
            f"{day.date()}; update the data"
        )
    row = before.iloc[-1]
    bad = [str(s) for s, v in row.items() if not (np.isfinite(v) and v > 0)]
    if bad:
        return f"missing prices for {', '.join(bad)} on {last.date()}"
    return None


def equity_at(cash: float, positions: dict[str, float], prices: pd.Series) -> float:
    return float(cash + sum(q * float(prices[s]) for s, q in positions.items()))


def _book_state(journal: Journal, book: BookRecord) -> PipelineState | None:
    """The pipeline state the book's next tick continues from (None: a new sequence)."""
    if book.as_of is None:
        return None
    for decision in journal.books.list_decisions(book.name, limit=50):
        if decision.stages and decision.stages.get("state"):
            return PipelineState.from_json(decision.stages["state"])
    return None


def _decision_fields(
    book_name: str, day: pd.Timestamp, policy_id: int | None, symbols: list[str]
) -> dict:
    """What every decision row of a tick starts with. A tick decides with the evaluator's
    pipeline and rules: its row names their version, as a trial's does, so a decision and a
    backtest are compared only within one version."""
    return {
        "book": book_name,
        "date": str(day.date()),
        "policy_id": policy_id,
        "evaluator_version": EVALUATOR_VERSION,
        "symbols": symbols,
        "orders": [],
        "fills": [],
    }


def tick(
    journal: Journal,
    book_name: str,
    broker: Broker,
    setup: TickSetup,
    day: pd.Timestamp,
    *,
    free_trade: bool = False,
    fresh_sequence: bool = True,
) -> DecisionRecord:
    """Decides ``day`` for the book, trades unless the kill switch says no, journals it.

    A tick is a transaction, once per (book, day): a tick the book left unfinished is settled
    first; a day decided already returns its decision unchanged when the policy is the same;
    a day on or before the book's last tick is refused. Orders are named and journaled before
    the broker is called. The caller serialises ticks of one book (:func:`book_lock`).

    ``free_trade`` waives the cost of this tick's orders (a deployment check opens its book at
    the first target for free, as the evaluator's backtest does). ``fresh_sequence`` starts a
    new solver sequence (a single tick); a run of ticks starts one for the whole run.

    Raises:
        Conflict: no such book.
        Conflict: the day is decided (by another policy) or not after the book's last tick.
    """
    if journal.books.get(book_name) is None:
        raise Conflict(f"no book named {book_name!r}; open it before ticking")
    settle_pending(journal, broker, book_name)
    book = journal.books.get(book_name)
    done = already(journal, book, setup.policy_id, day)
    if done is not None:
        return done
    if fresh_sequence:
        start_sequence()
    symbols = [str(s) for s in setup.prices.columns]
    stale = stale_reason(setup.prices, day)
    cash, positions = broker.holdings(book)
    fields = _decision_fields(book_name, day, setup.policy_id, symbols)
    if stale:
        fields |= {"status": "halted", "halt_reason": stale}
        return journal.books.commit_tick(
            book_name,
            fields,
            cash=book.cash,
            positions=book.positions,
            peak_equity=book.peak_equity,
            as_of=book.as_of,
        )
    before = _book_state(journal, book)
    plan, equity = _plan(book, setup, day, before, (cash, positions), fields, free_trade)
    why = halt_reason(
        setup.limits,
        manual=book.halted,
        stale=None,
        equity=equity,
        peak_equity=book.peak_equity,
        turnover=plan.turnover if plan else None,
    )
    peak = max(book.peak_equity, equity)
    if why or plan is None or not plan.orders:
        outcome = {"status": "halted", "halt_reason": why} if why else {"status": "sent"}
        if why:
            fields = _untraded(fields, before)
        return journal.books.commit_tick(
            book_name,
            fields | outcome,
            cash=cash,
            positions=positions,
            peak_equity=peak,
            as_of=fields["date"],
        )
    journal.books.begin_tick(book_name, fields["date"], fields, plan, peak)
    return _settle(journal, broker, book, fields, plan, peak, recover=False)


def _plan(
    book: BookRecord,
    setup: TickSetup,
    day: pd.Timestamp,
    state: PipelineState | None,
    holdings: tuple[float, dict[str, float]],
    fields: dict,
    free_trade: bool,
) -> tuple[OrderPlan | None, float]:
    """Decides ``day`` continuing from ``state`` (see :func:`_book_state`) and plans its named
    orders (None on a hold day); adds what it decided to ``fields``. Returns the plan and the
    book's equity at the closes the decision saw."""
    cash, positions = holdings
    symbols = fields["symbols"]
    closes = setup.prices[setup.prices.index < day].iloc[-1]
    equity = equity_at(cash, positions, closes)
    pre = {s: float(positions.get(s, 0.0)) * float(closes[s]) / equity for s in symbols}
    decided = _decide(setup, day, state)
    target = {s: float(w) for s, w in zip(symbols, decided.weights, strict=True)}
    plan = None
    if decided.rebalance:
        cost_bps = 0.0 if free_trade else setup.cost_bps
        plan = _order_plan(setup, target, holdings, closes, cost_bps)
        plan = _named(plan, book.name, fields["date"])
    fields |= {
        "pre_weights": pre,
        "stages": _stages(decided),
        "target_weights": target,
        "truncated": decided.truncated,
        "equity_before": equity,
        "orders": [o.model_dump() for o in plan.orders] if plan else [],
    }
    return plan, equity


def settle_pending(journal: Journal, broker: Broker, book_name: str) -> DecisionRecord | None:
    """Finishes the book's tick that was interrupted after its orders were journaled: asks the
    broker for each order by its ``client_order_id``, sends only those it never received, and
    journals the decision. None when nothing was pending."""
    pending = journal.books.pending_tick(book_name)
    if pending is None:
        return None
    book = journal.books.get(book_name)
    plan = OrderPlan(**pending.plan)
    return _settle(journal, broker, book, pending.fields, plan, pending.peak_equity, recover=True)


def already(
    journal: Journal, book: BookRecord, policy_id: int | None, day: pd.Timestamp
) -> DecisionRecord | None:
    """The book's decision for ``day`` when the same policy made it; refuses a day decided by
    another policy or not after the book's last tick (a book never trades back in time)."""
    date = str(day.date())
    existing = journal.books.decision_on(book.name, date)
    if existing is not None:
        if existing.policy_id == policy_id:
            return existing
        raise Conflict(
            f"book {book.name!r} decided {date} already (decision {existing.id}, policy "
            f"{existing.policy_id}); a day is decided once"
        )
    if book.as_of is not None and date <= book.as_of:
        raise Conflict(
            f"book {book.name!r} last ticked {book.as_of}: {date} is not after it; a book only "
            "ticks forward"
        )
    return None


def _untraded(fields: dict, before: PipelineState | None) -> dict:
    """``fields`` of a tick that traded nothing (halted, or every order rejected), handing on
    the pipeline state the tick started from instead of the one its decision made: the next
    tick decides again where this one stood, so the book trades toward the policy's target as
    soon as it may, rather than holding, until the next rebalance, a target it never bought.
    (A halt pauses the policy's rebalance clock.)"""
    stages = {**(fields.get("stages") or {}), "state": before.to_json() if before else None}
    return fields | {"stages": stages}


def _named(plan: OrderPlan, book: str, date: str) -> OrderPlan:
    """The plan with each order named by its book, date, symbol and side."""
    named = [
        o.model_copy(
            update={
                "client_order_id": client_order_id(
                    book, date, o.symbol, "buy" if o.shares > 0 else "sell"
                )
            }
        )
        for o in plan.orders
    ]
    return plan.model_copy(update={"orders": named})


def _decide(setup: TickSetup, day: pd.Timestamp, state: PipelineState | None) -> PipelineRun:
    """The pipeline's decision for ``day`` from the returns before it, continuing the book's
    sequence from ``state``."""
    n_before = int(setup.prices.index.searchsorted(day)) - 1  # returns rows before ``day``
    return setup.pipeline.run(setup.returns[:n_before], state)


def _stages(decided: PipelineRun) -> dict:
    """The decision's stages as journaled, with the state the next tick continues from."""
    stages = {name: np.asarray(v).tolist() for name, v in decided.stages.items()}
    stages["state"] = decided.state.to_json()
    if decided.cut_by:
        stages["cut_by"] = list(decided.cut_by)
    return stages


def _order_plan(
    setup: TickSetup,
    target: dict[str, float],
    holdings: tuple[float, dict[str, float]],
    closes: pd.Series,
    cost_bps: float,
) -> OrderPlan:
    """The orders to ``target``, filled at the last closes the decision saw."""
    cash, positions = holdings
    return weights_to_orders(
        target,
        positions,
        cash,
        {s: float(closes[s]) for s in target},
        cost_bps=cost_bps,
        min_trade=setup.min_trade,
        fractional=setup.fractional,
    )


def _settle(
    journal: Journal,
    broker: Broker,
    book: BookRecord,
    fields: dict,
    plan: OrderPlan,
    peak: float,
    *,
    recover: bool,
) -> DecisionRecord:
    """Sends the journaled plan's orders (asking the broker first when ``recover``), then
    journals the decision with its fills and the book's holdings after them, at once."""
    execution = broker.execute(plan, recover=recover)
    cash, positions = _after(broker, book, plan, execution, book.cash, book.positions)
    outcome: dict = {"orders": execution.orders or fields["orders"], "fills": execution.fills}
    rejected = execution.rejected
    if rejected:
        errors = "; ".join(f"{o['symbol']}: {o['error']}" for o in rejected)
        outcome["error"] = f"{len(rejected)} order(s) rejected, not retried: {errors}"
    outcome["status"] = "failed" if rejected and len(rejected) == len(execution.orders) else "sent"
    if outcome["status"] == "failed":
        fields = _untraded(fields, _book_state(journal, book))  # read before this commit
    return journal.books.commit_tick(
        book.name,
        fields | outcome,
        cash=cash,
        positions=positions,
        peak_equity=peak,
        as_of=fields["date"],
    )


def _after(
    broker: Broker,
    book: object,
    plan: OrderPlan | None,
    execution: Execution,
    cash: float,
    positions: dict[str, float],
) -> tuple[float, dict[str, float]]:
    """The book's holdings after the tick: the plan's for the paper ledger (every order fills),
    the broker's own report otherwise."""
    if not execution.orders:
        return cash, positions
    if broker.name == "paper" and plan is not None:
        return plan.cash, plan.positions
    return broker.holdings(book)  # type: ignore[arg-type]
