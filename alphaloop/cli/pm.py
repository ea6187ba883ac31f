"""The portfolio manager: ``alphaloop pm tick | run | status | halt | resume``."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.markup import escape

from alphaloop import ops
from alphaloop.cli._app import JsonFlag, console, guarded
from alphaloop.cli._options import Cli, request_command
from alphaloop.ops.requests import FILES, HaltRequest, ResumeBookRequest, TickRequest
from alphaloop.settings import MAIN_BOOK, get_settings

pm_app = typer.Typer(
    no_args_is_help=True,
    help="Portfolio manager: tick the active policy, check a deployment, halt and resume.",
)

BookOption = Annotated[str, typer.Option(help="the book's name")]
DATA_CLI = Cli(help="prices to use instead of the policy's own data (a name or a CSV/Parquet path)")
DataPathOption = Annotated[
    str | None, typer.Option("--data", help="prices to use instead of the policy's own data")
]


@pm_app.command("tick")
@request_command(TickRequest, cli={"data": DATA_CLI}, context={FILES: True})
def tick(request: TickRequest, as_json: JsonFlag = False) -> None:
    """Decide one day with the active policy from prices up to the day before, and trade.

    The kill switch (a manual halt, stale prices, pm_max_drawdown, pm_max_turnover) journals
    why and sends nothing. Exit 0 also when halted: the tick did its job.

    Example: alphaloop pm tick --date 2022-06-01 --json
    """
    day = None if request.date is None else request.date.isoformat()
    book = request.book
    decision = guarded(
        ops.pm.pm_tick,
        get_settings(),
        date=day,
        data=request.data,
        broker=request.broker,
        book=book,
    )
    if as_json:
        typer.echo(json.dumps(decision.model_dump(mode="json")))
        return
    verdict = decision.status + (f" ({decision.halt_reason})" if decision.halt_reason else "")
    console.print(f"{decision.date} book {escape(book)}: {escape(verdict)}")
    if decision.orders and decision.status == "halted":
        console.print("  held back, not sent:")
    for order in decision.orders:
        console.print(f"  {order['symbol']}: {order['shares']:+.4f} @ {order['price']:.2f}")
    if decision.error:
        console.print(f"[red]{escape(decision.error)}[/red]")


@pm_app.command("run")
def run(
    start: Annotated[str, typer.Option(help="first day, YYYY-MM-DD")],
    end: Annotated[str, typer.Option(help="last day, YYYY-MM-DD")],
    data: DataPathOption = None,
    book: Annotated[
        str | None, typer.Option(help="book name (default: check-ID-START-END)")
    ] = None,
    policy: Annotated[int | None, typer.Option(help="library id (default: the active one)")] = None,
    broker: Annotated[str, typer.Option(help="paper or alpaca")] = "paper",
    resume: Annotated[
        bool, typer.Option("--resume", help="continue the book an interrupted run left")
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Deployment check: tick a window in a separate book and compare with the backtest.

    Every trading day of the window is ticked, and the book's equity is compared with the
    evaluator's backtest of the same strategy.

    Example: alphaloop pm run --start 2021-01-04 --end 2021-03-31 --json
    """
    if broker not in ("paper", "alpaca"):
        raise typer.Exit(_bad(f"unknown broker {broker!r}; choose paper or alpaca"))
    report = guarded(
        ops.pm.pm_run,
        get_settings(),
        start=start,
        end=end,
        data=data,
        book=book,
        policy_id=policy,
        broker=broker,
        resume=resume,
    )
    if as_json:
        typer.echo(json.dumps(report.model_dump(mode="json")))
        return
    console.print(
        f"book {escape(report.book)}: {len(report.dates)} days {report.start}..{report.end}, "
        f"equity {report.equity[-1]:,.2f} (evaluator {report.evaluator_equity[-1]:,.2f}), "
        f"max |difference| {report.max_abs_diff:.3g}, halted days {report.halted_days}"
    )


@pm_app.command("status")
def status(
    book: BookOption = MAIN_BOOK,
    data: DataPathOption = None,
    last: Annotated[int, typer.Option(min=1, help="how many decisions to show")] = 5,
    as_json: JsonFlag = False,
) -> None:
    """Show a book: cash, positions, equity, P&L and its last decisions.

    Example: alphaloop pm status --json
    """
    st = guarded(ops.pm.pm_status, get_settings(), book=book, data=data, last=last)
    if as_json:
        typer.echo(json.dumps(st.model_dump(mode="json")))
        return
    b = st.book
    console.print(
        f"book {escape(b.name)} ({b.broker}){' HALTED: ' + escape(b.halted) if b.halted else ''}"
    )
    console.print(f"  cash {b.cash:,.2f}; positions {len(b.positions)}; as of {b.as_of}")
    if st.equity is not None:
        console.print(
            f"  equity {st.equity:,.2f}, P&L {st.pnl:+,.2f} (marked at the close of {st.marked_at})"
        )
    for d in st.decisions:
        why = f" ({escape(d.halt_reason)})" if d.halt_reason else ""
        held = " held back" if d.status == "halted" and d.orders else ""
        console.print(f"  #{d.id} {d.date} {d.status}{why}, {len(d.orders)} orders{held}")
    for e in st.events:
        console.print(f"  {e.created_at[:19]} {e.kind} ({e.origin}): {escape(e.reason)}")


@pm_app.command("halt")
@request_command(HaltRequest, cli={"why": Cli(flag="--why")})
def halt(request: HaltRequest, as_json: JsonFlag = False) -> None:
    """Halt a book: ticks journal the reason and send nothing until `pm resume`.

    Example: alphaloop pm halt --why "earnings week"
    """
    record = guarded(ops.pm.pm_halt, get_settings(), request.why, book=request.book, origin="cli")
    if as_json:
        typer.echo(json.dumps(record.model_dump(mode="json")))
        return
    console.print(f"book {escape(request.book)} halted: {escape(record.halted or '')}")


@pm_app.command("resume")
@request_command(ResumeBookRequest, cli={"why": Cli(flag="--why")})
def resume(request: ResumeBookRequest, as_json: JsonFlag = False) -> None:
    """Lift a book's manual halt (journaled with the reason and the origin).

    Example: alphaloop pm resume --why "earnings are out"
    """
    record = guarded(
        ops.pm.pm_resume, get_settings(), book=request.book, why=request.why, origin="cli"
    )
    if as_json:
        typer.echo(json.dumps(record.model_dump(mode="json")))
        return
    console.print(f"book {escape(request.book)} resumed")


def _bad(message: str) -> int:
    from alphaloop.cli._app import fail

    raise fail(message, 2)
