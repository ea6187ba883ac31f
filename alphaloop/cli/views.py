"""Rich renderables for the command line: trial results, trial tables, session reviews.

Strings from the journal (goals, reasons, errors, rationales, model ids) are wrapped in
``Text``: as plain ``str`` cells Rich would parse them as markup, and a goal such as
"hedge [/x]" would crash the view that shows it.

Every table is a :class:`FitTable`: it never splits a word across lines, at any width.
"""

from __future__ import annotations

import dataclasses
import itertools
import textwrap
from copy import copy
from typing import TYPE_CHECKING, Any

from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from alphaloop.evidence import ExcessEvidence, GateReport, PBOSummary
from alphaloop.ops.knobs import BoundsClip

if TYPE_CHECKING:  # the reports are what ops returns; the CLI starts without their modules
    from alphaloop.ops.records import FinalReport
    from alphaloop.ops.validate import StressReport, ValidationReport, WalkForward

METRIC_ROWS: tuple[tuple[str, str, str], ...] = (
    ("sharpe", "Sharpe", "{:.3f}"),
    ("sortino", "Sortino", "{:.3f}"),
    ("calmar", "Calmar", "{:.3f}"),
    ("annual_return", "annual return", "{:.2%}"),
    ("total_return", "total return", "{:.2%}"),
    ("volatility", "volatility", "{:.2%}"),
    ("max_drawdown", "max drawdown", "{:.2%}"),
    ("cvar_95", "CVaR 95% (daily)", "{:.2%}"),
    ("annual_turnover", "annual turnover", "{:.2f}"),
    ("hit_rate", "hit rate", "{:.1%}"),
)
STATUS_STYLE = {
    "keep": "green",
    "discard": "yellow",
    "crash": "red",
    "timeout": "red",
    "invalid": "magenta",
    "running": "cyan",
    "ran": "",
    "raced out": "yellow",
}


class FitTable(Table):
    """A table that never splits a word: each column is at least as wide as its longest word.

    Rich, squeezing a table into the terminal, narrows columns below their longest word and
    cuts words mid-way ("finish/ed", "cufoli/o_only"). Here, when the table is too wide, every
    column first gets its longest word (capped by its ``max_width``, where longer words end in
    an ellipsis) and the room left goes to the columns that wrap. When even that does not fit,
    the table is shown vertically: one block of ``header  value`` lines per row.
    """

    def add_column(self, header: Any = "", *args: Any, **kwargs: Any) -> None:
        # Only a word longer than a column's max_width is cut, and then visibly.
        kwargs.setdefault("overflow", "ellipsis")
        super().add_column(header, *args, **kwargs)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        widths = self._fitted_widths(console, options)
        if widths is None:
            yield self._vertical()
            return
        fitted = copy(self)
        fitted.columns = [
            dataclasses.replace(c, width=w) if w is not None else c
            for c, w in zip(self.columns, widths, strict=True)
        ]
        yield from Table.__rich_console__(fitted, console, options)

    def _fitted_widths(self, console: Console, options: ConsoleOptions) -> list[int | None] | None:
        """Content widths that fit ``options.max_width`` with no word split, ``[None, ...]``
        when the table fits as it is, or None when it cannot fit without splitting words."""
        room = options.max_width - self._extra_width
        ranges = [self._measure_column(console, options, c) for c in self.columns]
        if sum(r.maximum for r in ranges) <= room:
            return [None] * len(ranges)
        # A column that may not wrap (an id) keeps its whole width.
        floors = [
            r.maximum if c.no_wrap else r.minimum for c, r in zip(self.columns, ranges, strict=True)
        ]
        if sum(floors) > room:
            return None
        # The room left goes to the columns that would wrap, in proportion to what they lack.
        wants = [
            0 if c.no_wrap else r.maximum - r.minimum
            for c, r in zip(self.columns, ranges, strict=True)
        ]
        spare, total = room - sum(floors), sum(wants)
        extra = [spare * w // total for w in wants]
        cells = [f + e for f, e in zip(floors, extra, strict=True)]
        return [
            w - self._get_padding_width(c._index) for c, w in zip(self.columns, cells, strict=True)
        ]

    def _vertical(self) -> Group:
        headers = [c.header for c in self.columns]
        key_width = max((_text(h).cell_len for h in headers), default=0)
        rows = itertools.zip_longest(*(c.cells for c in self.columns), fillvalue="")
        blocks: list[Any] = []
        if self.title:
            title = _text(self.title).copy()
            title.stylize("italic")
            blocks.append(title)
        for row in rows:
            block = Table.grid(padding=(0, 2))
            block.add_column(style="bold", no_wrap=True, min_width=key_width)
            block.add_column(overflow="ellipsis")
            for header, cell in zip(headers, row, strict=True):
                block.add_row(header, cell)
            blocks.extend([block, Text("")])
        return Group(*blocks)


def _text(cell: Any) -> Text:
    """A header or cell as the Text Rich shows (a ``str`` there is markup)."""
    return cell if isinstance(cell, Text) else Text.from_markup(str(cell))


def plain(value: Any) -> Text:
    """``value`` as text Rich shows as it is, never as markup."""
    return Text("" if value is None else str(value))


def shorten(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters at a word boundary, ending in an ellipsis if cut
    (a first word longer than ``width`` is cut inside, ellipsis included)."""
    if len(text) <= width:
        return text
    cut = textwrap.shorten(text, width, placeholder="\u2026")
    return cut if cut != "\u2026" else text[: width - 1] + "\u2026"


def fmt(value: Any, spec: str = "{:.4f}") -> str:
    if value is None:
        return "-"
    try:
        return spec.format(value)
    except (ValueError, TypeError):
        return str(value)


def metrics_table(title: str, columns: dict[str, dict[str, float] | None]) -> Table:
    """One row per metric, one column per strategy (trial, baselines...)."""
    table = FitTable(title=title, title_justify="left")
    table.add_column("metric")
    for name in columns:
        table.add_column(name, justify="right")
    for key, label, spec in METRIC_ROWS:
        table.add_row(label, *[fmt((m or {}).get(key), spec) for m in columns.values()])
    return table


def clips_table(clips: list[BoundsClip] | list[Any]) -> Table:
    table = FitTable(title="bounds clips", title_justify="left")
    for col in ("knob", "proposed", "applied", "reason"):
        table.add_column(col)
    for c in clips:
        table.add_row(c.knob, fmt(c.proposed, "{:g}"), fmt(c.applied, "{:g}"), plain(c.reason))
    return table


def describe_changes(changes: dict[str, float] | None) -> str:
    if not changes:
        return "-"
    return ", ".join(f"{k}={v:g}" for k, v in changes.items())


def trials_table(
    trials: list[Any],
    clips_by_trial: dict[int, list[Any]] | None = None,
    title: str = "trials",
    *,
    shown: dict[int, str],
) -> Table:
    """A row per journaled trial: index, kind, status, objective, changed knobs, clips.
    ``shown`` is each trial's shown status (``ops.rows.shown_statuses``): the page's and the
    CSV's words. A raced-out trial's one-fold score is not in the objective column, whose
    figures rank against each other."""
    clips_by_trial = clips_by_trial or {}
    table = FitTable(title=title, title_justify="left", expand=False)
    for col, kw in (
        ("#", {"justify": "right"}),
        ("kind", {}),
        ("status", {}),
        ("objective", {"justify": "right"}),
        ("MDD", {"justify": "right"}),
        ("proposer", {}),
        ("changes", {"max_width": 48}),
        ("reason / clips", {"max_width": 48}),
    ):
        table.add_column(col, **kw)
    for t in trials:
        clips = clips_by_trial.get(t.id, [])
        parts = [t.error or t.reason or ""]
        violation = getattr(t, "violation", None)
        if violation and violation not in parts[0]:  # a kept baseline that breaks a limit
            parts.append(violation)
        # The verdict first (a long note is cut at its end), then the knobs clipped to bounds.
        parts += [f"clipped {c.knob}: {c.proposed:g}->{c.applied:g}" for c in clips]
        note = "; ".join(p for p in parts if p)
        status = shown.get(t.id, str(t.status))
        # a raced-out trial's score is one fold's: its reason says it, the column does not
        objective = "-" if status == "raced out" else fmt(t.objective)
        table.add_row(
            str(t.idx),
            t.kind,
            Text(status, style=STATUS_STYLE.get(status, "")),
            objective,
            fmt((t.metrics or {}).get("max_drawdown"), "{:.1%}"),
            plain(t.proposer),
            plain(describe_changes((t.delta or {}).get("changes"))),
            plain(shorten(note, 200)),
        )
    return table


def final_panel(session: Any) -> Panel:
    """What finalize concluded. When the reported trial breaks the session's limits (nothing
    met them) that comes first, in red: the figures below are then not a result within them."""
    final: FinalReport | None = session.final
    if final is None:
        return Panel(plain("stopped: -\ntrials run: -"), title="finalize", title_align="left")
    lines = [f"stopped: {final.stop_reason}", f"trials run: {final.n_trials}"]
    reported = "the best" if final.best_trial_id is not None else "the baseline"
    lines.extend(pick_lines(final))
    lines.extend(selection_lines(Selection.of_final(final), reported))
    if final.best_policy_path:
        lines.append(f"best policy: {final.best_policy_path}")
    columns = {}
    if final.best_test:
        columns["best (test)"] = final.best_test
    if final.baseline_test:
        columns["baseline (test)"] = final.baseline_test
    body: list[Any] = []
    if final.admissible is False:
        body.append(
            Text(
                f"NOT WITHIN THE LIMITS: {final.admissible_reason or 'no trial met them'}",
                style="bold red",
            )
        )
    elif final.admissible_reason:
        body.append(plain(f"limits: {final.admissible_reason}"))
    body.append(plain("\n".join(lines)))
    if columns:
        body.append(metrics_table("held-out test window, evaluated once", columns))
    if final.gates:
        body.append(gates_table(final.gates, "go/no-go gates (test window)"))
    return Panel(Group(*body), title="finalize", title_align="left")


def pick_lines(final: FinalReport) -> list[str]:
    """The pick and why, the folds it was chosen on, and on TEST its Sharpe against the
    default's and 1/N's with the paired difference, its standard error and p-value."""
    lines = []
    if final.pick:
        lines.append(f"pick: {final.pick} ({final.pick_reason or '-'})")
    folds = final.folds
    if folds is not None and folds.windows:
        first, last = folds.windows[0][0], folds.windows[-1][1]
        lines.append(f"scored on {folds.n} fold(s), {first}..{last}")
        if folds.note:
            lines.append(f"  {folds.note}")
    for ref, label in (("default", "the default"), ("equal_weight", "1/N")):
        evidence = (final.excess or {}).get(ref)
        if isinstance(evidence, ExcessEvidence):
            test = evidence.test
            lines.append(
                f"TEST Sharpe {test.sharpe_a:.2f} vs {label} {test.sharpe_b:.2f}: "
                f"difference {test.difference:+.2f} (se {test.se:.2f}, p {test.p_value:.3f})"
            )
    return lines


@dataclasses.dataclass(frozen=True)
class Selection:
    """What the search's selection is worth, as a final report or a validation report says it:
    the deflated Sharpe (over N and N effective, and the set N counts), the probabilistic
    Sharpe and PBO (or why it was not computed)."""

    n_trials: int | float | None
    deflated_sharpe: float | None
    deflated_sharpe_effective: float | None
    n_effective_trials: float | None
    dsr_set: str | None
    probabilistic_sharpe: float | None
    pbo: PBOSummary | None
    pbo_note: str | None = None

    @classmethod
    def of_final(cls, final: FinalReport) -> Selection:
        return cls(
            n_trials=final.dsr_n_trials if final.dsr_n_trials is not None else final.n_trials,
            deflated_sharpe=final.deflated_sharpe,
            deflated_sharpe_effective=final.deflated_sharpe_effective,
            n_effective_trials=final.n_effective_trials,
            dsr_set=final.dsr_set,
            probabilistic_sharpe=final.probabilistic_sharpe,
            pbo=final.pbo_summary if final.pbo is not None else None,
            pbo_note=final.pbo_note,
        )


def selection_lines(selection: Selection, reported: str) -> list[str]:
    """The deflated Sharpe (N, N effective and the set they count) and PBO of a selection."""
    s = selection
    lines = []
    if s.deflated_sharpe is not None:
        lines.append(
            f"deflated Sharpe ratio of {reported} (N = {s.n_trials}): {s.deflated_sharpe:.3f}"
        )
    if s.deflated_sharpe_effective is not None:
        lines.append(
            f"  under N effective = {s.n_effective_trials:.1f} independent trials: "
            f"{s.deflated_sharpe_effective:.3f}"
        )
    if s.dsr_set:
        lines.append(f"  N counts the {s.dsr_set}")
    if s.probabilistic_sharpe is not None:
        lines.append(f"probabilistic Sharpe ratio: {s.probabilistic_sharpe:.3f}")
    if s.pbo is not None:
        pbo = s.pbo
        shown = (
            f", 95% interval {pbo.interval[0]:.2f}-{pbo.interval[1]:.2f}" if pbo.interval else ""
        )
        lines.append(
            f"probability of backtest overfitting (CSCV, S = {pbo.n_blocks}): {pbo.pbo:.3f}{shown}"
        )
        if pbo.n_trials and pbo.n_days:
            left = pbo.n_trials_left_out
            raced = f"; {left} raced-out trials left out" if left else ""
            lines.append(f"  over {pbo.n_trials} trials x {pbo.n_days:,} scored days{raced}")
    elif s.pbo_note:
        lines.append(f"PBO not computed: {s.pbo_note}")
    return lines


def gates_table(report: GateReport, title: str) -> Table:
    """Pass/fail per go/no-go gate, and the verdict in the title (a pick that does not beat
    1/N said first)."""
    table = FitTable(title=f"{title}: {report.headline()}")
    table.title_justify = "left"
    for col in ("gate", "verdict", "why"):
        table.add_column(col)
    for r in report.results:
        table.add_row(
            r.gate,
            Text("pass" if r.passed else "FAIL", style="green" if r.passed else "bold red"),
            plain(r.reason),
        )
    return table


def validation_panel(report: ValidationReport) -> Panel:
    """A validation report (``alphaloop validate``): DSR, PBO, walk-forward windows, stress
    cases next to equal weight, and the gates."""
    dsr, pbo = report.deflated_sharpe, report.pbo
    selection = Selection(
        n_trials=report.n_search_trials,
        deflated_sharpe=dsr.dsr,
        deflated_sharpe_effective=dsr.dsr_effective,
        n_effective_trials=dsr.n_effective,
        dsr_set=report.dsr_set,
        probabilistic_sharpe=dsr.psr,
        pbo=pbo,
    )
    lines = [f"trial #{report.trial_idx} ({report.reported})"]
    lines += selection_lines(selection, f"the {report.reported}")
    quantiles = ", ".join(f"{k} {v:+.2f}" for k, v in pbo.logit_quantiles.items())
    lines.append(f"  logit quantiles: {quantiles}")
    lines.append(f"suite took {fmt(report.elapsed_s, '{:.1f}')} s")
    unseen = report.unseen_start
    if unseen:
        lines.append(
            f"unseen data (no search scored it): {unseen} on, {report.unseen_days or 0:,} "
            "days; walk-forward and stress run there"
        )
    if report.walk_forward_note:
        lines.append(f"walk-forward: {report.walk_forward_note}")
    lines += multiplicity_lines(report)
    body: list[Any] = [plain("\n".join(lines))]
    body.append(walk_forward_table(report.walk_forward))
    body.append(stress_table(report.stress, unseen))
    body.append(gates_table(report.gates, f"go/no-go gates ({report.gates_evidence})"))
    return Panel(Group(*body), title=f"validation of {report.session_id}")


def multiplicity_lines(report: ValidationReport) -> list[str]:
    """Which search configs beat the default on the folds' days, under each answer to "many
    configs tried" (a validation report's ``multiplicity``), or why that was not computed."""
    m = report.multiplicity
    if m is None:
        note = report.multiplicity_note
        return [f"configs against the default: not computed ({note})"] if note else []

    def named(trials: list[int] | tuple[int, ...]) -> str:
        return ", ".join(f"#{i}" for i in trials) or "none"

    holm = [c.trial for c in m.configs if c.holm]
    ras = [c.trial for c in m.configs if (c.ras_lower or 0.0) > 0.0]
    return [
        f"configs that beat the default at {m.q:.0%} FDR (Benjamini-Hochberg), of "
        f"{len(m.configs)}: {named(m.beat_default_fdr)}",
        f"  at {m.alpha:.0%} family-wise (Holm): {named(holm)}; with a Rademacher Anti-Serum "
        f"lower bound above 0 ({1 - m.delta:.0%}, all at once{_reach(m.ras_reach)}): "
        f"{named(ras)}",
    ]


def _reach(reach: float | None) -> str:
    """RAS's own limit beside its verdict: below it no excess can be certified at all."""
    return "" if reach is None else f"; blind below {reach:.1f} of excess Sharpe at this length"


def walk_forward_table(wf: WalkForward | None) -> Table:
    table = FitTable(title="walk-forward (evaluation cost charged)", title_justify="left")
    for col in ("scheme", "#", "train", "evaluation", "Sharpe", "equal weight", "MDD"):
        right = col in ("#", "Sharpe", "equal weight", "MDD")
        table.add_column(col, justify="right" if right else "left", no_wrap=col != "scheme")
    for w in wf.windows if wf else ():
        ew = w.baselines.get("equal_weight")
        table.add_row(
            w.scheme,
            str(w.index),
            f"{w.train_start}..{w.train_end}",
            f"{w.eval_start}..{w.eval_end}",
            fmt(w.metrics.sharpe, "{:.3f}"),
            fmt(ew.sharpe if ew else None, "{:.3f}"),
            fmt(w.metrics.max_drawdown, "{:.1%}"),
        )
    for m in wf.summaries if wf else ():
        table.add_row(
            m.scheme,
            "all",
            f"mean {m.mean_sharpe:.2f}, min {m.worst_sharpe:.2f}",
            f"> equal weight: {m.beat_equal_weight} of {m.n_windows}",
            fmt(m.pooled_sharpe, "{:.3f}"),
            "",
            fmt(m.pooled_max_drawdown, "{:.1%}"),
        )
    return table


def stress_table(stress: StressReport, unseen_start: str | None = None) -> Table:
    """The stress cases by strategy; with ``unseen_start`` (an ISO date), a column saying
    whether each case runs on unseen data or in sample (a named crisis before it)."""
    table = FitTable(title="stress (Sharpe / max drawdown)", title_justify="left")
    cases = stress.cases
    names = list(cases[0].metrics) if cases else []
    table.add_column("scenario")
    table.add_column("span")
    if unseen_start:
        table.add_column("data")
    for name in names:
        table.add_column(name, justify="right")
    for c in cases:
        cells = [
            f"{fmt(m.sharpe if m else None, '{:.2f}')} / "
            f"{fmt(m.max_drawdown if m else None, '{:.1%}')}"
            for m in (c.metrics.get(n) for n in names)
        ]
        if unseen_start:
            cells.insert(0, "unseen" if c.start >= unseen_start else "in sample")
        table.add_row(c.scenario, f"{c.start}..{c.end}", *cells)
    return table


def session_header(session: Any) -> Panel:
    data = session.settings.data
    windows = (
        ", ".join(
            f"{k} {a}..{b}"
            for k, (a, b) in (
                ("train", data.train),
                ("validation", data.validation),
                ("test", data.test),
            )
        )
        if data
        else ""
    )
    from alphaloop.ops.objective import objective_view

    objective = objective_view(session)
    limits = f"; limits: {objective.limits}" if objective.limits else ""
    text = Text(f"{session.id}", style="bold")
    text.append(
        "\n".join(
            [
                f"  {session.status}",
                f"goal: {session.goal}",
                f"mode: {session.mode}   proposer: {session.proposer}   "
                f"budget: {session.budget} trials",
                f"objective: {objective.label}{limits}",
                f"  ({objective.explained})",
                f"noise floor (baseline spread): {fmt(session.noise_floor)}",
                f"data: {session.data_source} [{windows}]",
            ]
        )
    )
    return Panel(text, title="session", title_align="left")


def pick_text(best: Any) -> str:
    """A session's best as the page says it: ``1.0062 (#24)``, ``0.8747 (default)`` when
    finalize picked the default config, ``, so far`` while it is the incumbent."""
    if best is None:
        return "-"
    who = "default" if best.kind == "baseline" else f"#{best.idx}"
    return f"{fmt(best.objective)} ({who}{'' if best.final else ', so far'})"


def sessions_table(sessions: list[Any], counts: dict[str, int], best: dict[str, Any]) -> Table:
    """The sessions with their trials counted and their best (:func:`pick_text`), by id."""
    table = FitTable(title="sessions", title_justify="left")
    # The id is what every other command takes: never wrap or truncate it.
    table.add_column("id", no_wrap=True, min_width=22)
    for col in ("status", "mode", "proposer", "trials", "best"):
        table.add_column(col)
    table.add_column("goal", ratio=1)
    for s in sessions:
        table.add_row(
            s.id,
            s.status,
            s.mode,
            plain(s.proposer),
            f"{counts.get(s.id, 0)}/{s.budget}",
            pick_text(best.get(s.id)),
            plain(shorten(s.goal, 60)),
        )
    return table


def resume_line(session: Any, counted: int, command: str) -> Text:
    """Why a session can be resumed, and the command that does it."""
    if session.status == "interrupted":
        why = f"{session.id} was interrupted" + (f" ({session.error})" if session.error else "")
    else:
        left = session.budget - counted
        why = f"{session.id} was stopped with {left} trial(s) of its budget left"
    return Text(f"{why}; resume it with `{command}`")


def steps_note(trained: int | None, total_timesteps: int, n_envs: int) -> str | None:
    """A line saying PPO trained fewer env steps than asked, or None when it trained exactly
    the budget (or did not train). The budget is a hard cap split evenly over the env copies,
    so a budget that ``n_envs`` does not divide trains the largest multiple of it within."""
    if trained is None or trained == total_timesteps:
        return None
    return (
        f"trained {trained:,} env steps (budget {total_timesteps:,}: the largest multiple of "
        f"n_envs = {n_envs} within it)"
    )


def live_curve_text(trial: Any, alive: bool = True) -> Text:
    """One line about a trial still training: how many curve points, and the latest one."""
    curve = [p for p in trial.curve or [] if isinstance(p, list | tuple) and len(p) >= 2]
    if alive:
        text = Text(f"live: trial #{trial.idx} is {trial.status}", style="cyan")
    else:
        text = Text(
            f"trial #{trial.idx} is marked running but its process ({trial.owner_pid}) is gone",
            style="yellow",
        )
    if curve:
        step, reward = curve[-1][0], curve[-1][1]
        points = f"{len(curve)} curve point{'' if len(curve) == 1 else 's'}"
        text.append(f", {points}, latest: step {int(step):,}, ")
        text.append(f"mean episode reward {fmt(reward)}")
    else:
        text.append(", no training curve point yet")
    return text


def chart_read_panel(read: Any) -> Panel:
    """A chart reading: its bullets and who read it, in how long."""
    body = Text()
    for bullet in read.bullets:
        body.append("\u2022 ")
        body.append(f"{bullet}\n")
    body.append(read.signature, style="dim")
    return Panel(body, title=f"{read.kind} read", title_align="left")


def chart_reads_table(reads: list[Any]) -> Table:
    """Every chart reading of a session: kind, reader, time taken, bullets."""
    table = FitTable(title="chart reads", title_justify="left")
    table.add_column("kind")
    table.add_column("model", max_width=28)
    table.add_column("s", justify="right")
    table.add_column("bullets", ratio=1)
    for r in reads:
        table.add_row(
            r.kind,
            plain(r.model),
            fmt(r.elapsed_s, "{:.2f}"),
            Text("\n".join(f"\u2022 {b}" for b in r.bullets)),
        )
    return table
