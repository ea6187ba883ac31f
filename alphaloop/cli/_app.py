"""The Typer app, the consoles and the helpers every command module shares.

Exit codes: 0 ok, 1 the work failed, 2 bad usage (unknown session, bad flag values...). An error
the library raises ends a command with the code its class carries (:mod:`alphaloop.exceptions`).
"""

from __future__ import annotations

import inspect
import re
import warnings
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.markup import escape

from alphaloop import ops
from alphaloop.exceptions import AlphaloopError, DataWarning, InvalidDelta, NoJournal, exit_code_of
from alphaloop.ops.knobs import ConfigDelta
from alphaloop.vocabulary import MODES

if TYPE_CHECKING:
    from rich.progress import Progress

    from alphaloop.ops.trial import TrialBudget


class _ErrorConsole(Console):
    """stderr, soft-wrapped when it is not a terminal: a log file or a calling program gets each
    message on one line, with no path or session id split at column 80."""

    def print(self, *objects: Any, soft_wrap: bool | None = None, **kwargs: Any) -> None:
        if soft_wrap is None:
            soft_wrap = not self.is_terminal
        super().print(*objects, soft_wrap=soft_wrap, **kwargs)


console = Console()
err_console = _ErrorConsole(stderr=True)
T = TypeVar("T")


def step_progress(label: str, unit: str, field: str) -> Progress:
    """A live bar for human output: ``label``, done/total ``unit``, the latest ``field`` value
    (the task's ``field`` keyword) and the time elapsed."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn(f"[bold]{label}"),
        BarColumn(),
        TextColumn(f"{{task.completed:,}}/{{task.total:,}} {unit}"),
        TextColumn(f"{field} {{task.fields[{field}]}}"),
        TimeElapsedColumn(),
        console=console,
    )


FILLS = ("none", "ffill")
DATA_HELP = (
    "sp500, synthetic[:SEED], a market with a known answer (null, tied, flat or planted[:SEED]) "
    "or a CSV/Parquet path"
)
NO_JOURNAL_HINT = 'start a session with `alphaloop research "GOAL"` (or set ALPHALOOP_HOME)'


app = typer.Typer(
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    help="Goal-driven autoresearch on portfolio strategies.",
)


# A line that starts a list item or an indented block keeps its line break when help reflows.
_KEEP_BREAK = re.compile(r"^(\s|[-*]\s|\d+[.)]\s)")


def reflow(doc: str) -> str:
    """A docstring's paragraphs as single lines, so the terminal wraps them at its own width.

    Rich help keeps every line break of a docstring written to ~95 columns, which breaks each
    line again in an 80-column terminal. List items and indented lines stay on their own lines.
    """
    paragraphs = []
    for paragraph in inspect.cleandoc(doc).split("\n\n"):
        lines = paragraph.split("\n")
        joined = lines[0]
        for line in lines[1:]:
            joined += ("\n" if _KEEP_BREAK.match(line) else " ") + line
        paragraphs.append(joined)
    return "\n\n".join(paragraphs)


def reflow_help(group: typer.Typer) -> None:
    """Reflow the help of every command of ``group`` and of its subgroups (see :func:`reflow`)."""
    for command in group.registered_commands:
        doc = command.help or inspect.getdoc(command.callback)
        if doc:
            command.help = reflow(doc)
    for sub in group.registered_groups:
        if sub.typer_instance is not None:
            reflow_help(sub.typer_instance)


def fail(message: str, code: int = 1) -> typer.Exit:
    # Escaped: messages quote user input and paths, where "[...]" is not Rich markup (an
    # unmatched "[/x]" would crash the error report itself).
    err_console.print(f"[red]error:[/red] {escape(message)}")
    return typer.Exit(code)


def guarded(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Runs library code, turning our errors into a message and the exit code of the error
    table (:func:`alphaloop.exceptions.exit_code_of`)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", category=DataWarning)
        try:
            result = fn(*args, **kwargs)
        except NoJournal as err:
            raise fail(f"no journal at {err.path}; {NO_JOURNAL_HINT}", exit_code_of(err)) from None
        except ValidationError as err:  # a budget or spec field out of range
            raise flag_error(err) from None
        except AlphaloopError as err:
            raise fail(str(err), exit_code_of(err)) from None
        finally:
            for w in caught:
                if issubclass(w.category, DataWarning):
                    err_console.print(f"[yellow]warning:[/yellow] {escape(str(w.message))}")
    return result


def parse_sets(sets: list[str]) -> ConfigDelta:
    changes: dict[str, str] = {}
    for item in sets:
        key, sep, value = item.partition("=")
        if not sep:
            raise fail(f"--set takes knob=value, got {item!r}", 2)
        changes[key.strip()] = value.strip()
    try:
        return ConfigDelta(changes=changes, rationale="set by hand")
    except InvalidDelta as err:
        raise fail(str(err), exit_code_of(err)) from None


def parse_duration(text: str | None, flag: str = "--time-budget") -> float | None:
    """Seconds in ``text`` (``90s``, ``10m``, ``1h30m``), or exit 2. A unit is required: a bare
    ``10`` reads as minutes to some and seconds to others."""
    if text is None:
        return None
    match = re.fullmatch(
        r"\s*(?:(\d+(?:\.\d+)?)h)?\s*(?:(\d+(?:\.\d+)?)m)?\s*(?:(\d+(?:\.\d+)?)s)?\s*", text
    )
    if not match or not any(match.groups()):
        if re.fullmatch(r"\s*\d+(?:\.\d+)?\s*", text):
            n = text.strip()
            raise fail(f"{flag} {text!r} has no unit; write {n}s, {n}m or {n}h", 2)
        raise fail(f"cannot read duration {text!r}; use forms like 90s, 10m, 1h30m", 2)
    h, m, s = (float(g) if g else 0.0 for g in match.groups())
    seconds = h * 3600 + m * 60 + s
    if seconds <= 0:
        raise fail(f"duration must be positive, got {text!r}", 2)
    return seconds


def parse_symbols(text: str | None) -> list[str] | None:
    """The names in a ``--symbols`` list, or None when the flag was not given (all columns).

    A list with no names in it (``,,`` or ``""``) is refused rather than read as "all symbols".
    """
    if text is None:
        return None
    names = [s.strip() for s in text.split(",") if s.strip()]
    if not names:
        raise fail(f"no symbols in --symbols {text!r}; give column names like AAPL,MSFT", 2)
    return names


def check_seed(seed: int, high: int, why: str = "") -> None:
    """Exit 2 naming ``--seed`` when ``seed`` is outside ``0..high`` (``why`` explains ``high``)."""
    if not 0 <= seed <= high:
        raise fail(f"--seed must be in 0..{high}{why}, got {seed}", 2)


# Fields whose flag is not ``--`` plus the field name.
_FLAGS = {"goal": "GOAL", "time_budget_s": "--time-budget"}


def flag_error(err: ValidationError) -> typer.Exit:
    """Exit 2 naming the flag of the first invalid field, what is wrong and the value given."""
    first = err.errors()[0]
    message = first["msg"].removeprefix("Value error, ")  # pydantic's prefix for our own checks
    if not first["loc"]:  # a rule across fields: its message names them
        return fail(message, exit_code_of(err))
    field = str(next((p for p in reversed(first["loc"]) if isinstance(p, str)), first["loc"][0]))
    where = _FLAGS.get(field, "--" + field.replace("_", "-"))
    if first["type"] == "literal_error":  # one of a vocabulary: say which words it has
        expected = first.get("ctx", {}).get("expected", "").replace("'", "").replace(" or ", ", ")
        name = field.replace("_", " ")
        return fail(f"unknown {name} {first.get('input')!r}; choose one of {expected}", 2)
    return fail(f"{where}: {message}, got {first.get('input')!r}", exit_code_of(err))


def trial_budget(
    total_timesteps: int | None,
    n_envs: int | None = None,
    *,
    truncate_drawdown: float | None = None,
    stop_properly: float | None = None,
    advantage: str | None = None,
) -> TrialBudget:
    """The session settings a command was given (defaults for what it was not), or exit 2
    naming the flag that is out of range."""
    try:
        return ops.trial.trial_budget(
            total_timesteps,
            n_envs,
            truncate_drawdown=truncate_drawdown,
            stop_properly=stop_properly,
            advantage=advantage,
        )
    except ValidationError as err:
        raise flag_error(err) from None


def training_note(budget: TrialBudget) -> str | None:
    """One line on how PPO trains when it is not the default way (None when it is)."""
    parts = []
    if budget.advantage != "gae":
        parts.append(f"{budget.advantage} advantages (no critic)")
    if budget.truncate_drawdown is not None:
        parts.append(
            f"episodes truncated at a {budget.truncate_drawdown:.1%} drawdown, "
            f"stop_properly {budget.stop_properly:g}"
        )
    return "PPO training: " + "; ".join(parts) if parts else None


def choice(choices: tuple[str, ...] | Callable[[], Iterable[str]], what: str) -> dict[str, Any]:
    """``typer.Option`` keywords for a flag taking one of ``choices``: the parser checks it (exit
    2, naming the kind of value: ``unknown mode 'rl'; choose one of ...``) and ``--help`` lists
    the choices. A callable is asked for them when the flag is parsed (their definition may
    live in a module that is slow to import), and ``--help`` shows ``what`` instead."""

    def parse(value: str) -> str:
        known = tuple(choices if isinstance(choices, tuple) else choices())
        if value in known:
            return value
        raise fail(f"unknown {what} {value!r}; choose one of {', '.join(known)}", 2)

    shown = "|".join(choices) if isinstance(choices, tuple) else what.upper()
    return {"parser": parse, "metavar": f"[{shown}]"}


# Options several commands share, defined once.
JsonFlag = Annotated[
    bool, typer.Option("--json", help="machine-readable output: one JSON document on stdout")
]
ModeOption = Annotated[str, typer.Option(**choice(MODES, "mode"), help="what the trials run")]


def objective_metrics() -> tuple[str, ...]:
    """The metrics a session may maximise (their module loads numpy: asked when parsing)."""
    from alphaloop.vocabulary import METRICS

    return METRICS


def advantage_estimators() -> tuple[str, ...]:
    """The advantage estimators PPO trains with (their module loads gymnasium: asked when
    parsing)."""
    from alphaloop.ops.trial import advantage_estimators as known

    return known()


MetricOption = Annotated[
    str,
    typer.Option(
        **choice(objective_metrics, "metric"),
        help="the objective the trials are ranked by: sharpe, sortino, calmar or return",
    ),
]
FillOption = Annotated[
    str,
    typer.Option(**choice(FILLS, "fill policy"), help="missing prices: none (refuse) or ffill"),
]
DataOption = Annotated[str, typer.Option(help=DATA_HELP)]
DateFormatOption = Annotated[
    str | None, typer.Option(help="strptime format for the date column, e.g. %d/%m/%Y")
]
SymbolsOption = Annotated[
    str | None, typer.Option(help="comma-separated subset of the data's columns")
]
SetOption = Annotated[list[str], typer.Option("--set", help="knob=value (repeatable)")]
SeedOption = Annotated[int, typer.Option()]
FoldsOption = Annotated[
    int | None,
    typer.Option(
        help="walk-forward folds of the history before TEST each trial is scored on "
        "(default 3, fewer when the data is shorter; 1 scores VALIDATION alone)"
    ),
]
# PPO training options: session settings (TrialBudget), checked by its bounds (exit 2).
TruncateDrawdownOption = Annotated[
    float | None,
    typer.Option(
        help="end a PPO training episode, as truncated, once its value falls this far below "
        "its peak: in (0, 1), e.g. 0.2 (default: never)"
    ),
]
StopProperlyOption = Annotated[
    float | None,
    typer.Option(
        help="in [0, 1]: share of a truncated episode's reward it keeps (a loss grows by the "
        "rest); needs --truncate-drawdown (default 1: no penalty)"
    ),
]
AdvantageOption = Annotated[
    str,
    typer.Option(
        **choice(advantage_estimators, "advantage estimator"),
        help="PPO advantages: gae (SB3's, with a critic), grpo (group-relative) or "
        "reinforce_pp (REINFORCE++, leave-one-out baseline)",
    ),
]
