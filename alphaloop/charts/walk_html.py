"""A walk's tear sheet as one self-contained HTML file (``alphaloop report WALK_ID``): the
verdict with the edge the record could detect, the figures, each rule's record, the gates and
the epochs. plotly.js is inlined; nothing is loaded from the network."""

from __future__ import annotations

from html import escape

import plotly.graph_objects as go

from alphaloop.charts.tearsheet_html import figure_html, gates_table, page_html
from alphaloop.charts.walk import WalkSheet, config_names, traded_name
from alphaloop.evidence import ExcessEvidence
from alphaloop.journal import RuleRecord, WalkReport

_REFERENCES = (("default", "the default config"), ("equal_weight", "1/N"))


def walk_html(sheet: WalkSheet, figures: dict[str, go.Figure]) -> str:
    """The sheet and its figures as one HTML document (nothing referenced outside it)."""
    report = sheet.report
    own = report.record()
    parts = [
        _header(sheet),
        "<h2>What the record could detect</h2>",
        _detectable(report),
        *(figure_html(name, fig) for name, fig in figures.items()),
        "<h2>Each rule's record, end to end</h2>",
        _records(report),
        f"<h2>Go/no-go gates of the {escape(report.rule)} rule's record</h2>",
        gates_table(own.gates),
        f"<h2>Epochs ({escape(report.rule)} rule)</h2>",
        _epochs(report),
        "<h2>Preference pairs</h2>",
        _pairs(report),
    ]
    return page_html(sheet.title, parts)


def _num(value: float | None, spec: str) -> str:
    return "-" if value is None else escape(format(value, spec))


def _header(sheet: WalkSheet) -> str:
    r = sheet.report
    own = r.record()
    cls = "go" if r.go else "nogo"
    return (
        f"<h1>{escape(sheet.title)}</h1>"
        f"<div class=muted>goal: {escape(sheet.goal)} &middot; mode: {escape(sheet.mode)} "
        f"&middot; data: {escape(sheet.data)} &middot; {escape(sheet.proposer)}, "
        f"{sheet.budget} trials an epoch &middot; {escape(r.cadence)} epochs, "
        f"{escape(r.rule)} rule</div>"
        f"<div class=muted>out of sample: {escape(r.first_day)} .. {escape(r.last_day)}, "
        f"{r.n_days} days in {len(r.epochs)} epochs, each day looked at once; the pick was the "
        f"default in {own.n_default} of {len(r.epochs)} epochs and changed "
        f"{own.n_changes} time(s)</div>"
        f"<div class='verdict {cls}' id=verdict>{escape(r.verdict)}</div>"
    )


def _test(record: RuleRecord, ref: str) -> tuple[str, str]:
    """(the Sharpe difference, its p-value) against ``ref``, or the note saying why none."""
    evidence = record.excess.get(ref)
    if isinstance(evidence, ExcessEvidence):
        return _num(evidence.test.difference, "+.2f"), _num(evidence.test.p_value, ".3f")
    note = escape(getattr(evidence, "note", "no test"), quote=True)
    return f"<span title='{note}'>none</span>", "-"


def _detectable(report: WalkReport) -> str:
    own = report.record()
    best = report.record("best")
    rows = []
    for ref, name in _REFERENCES:
        edge, source = own.detectable.get(ref), ""
        if edge is None and own is not best:
            edge, source = best.detectable.get(ref), f" (read off the {best.rule} rule's record)"
        diff, p = _test(own, ref)
        rows.append(
            f"<tr><td>{escape(name)}</td><td class=num>{diff}</td><td class=num>{p}</td>"
            f"<td class=num>{_num(edge, '+.2f')}{escape(source)}</td></tr>"
        )
    return (
        "<p class=muted>The minimum detectable edge is the annualised Sharpe difference the "
        "record's one-sided paired test detects with 80% power at its level, given its length "
        "and the correlations observed: a smaller edge could still hide in this history.</p>"
        "<table id=detectable><tr><th>against</th><th class=num>Sharpe difference</th>"
        "<th class=num>p-value</th><th class=num>minimum detectable edge</th></tr>"
        f"{''.join(rows)}</table>"
    )


def _records(report: WalkReport) -> str:
    head = (
        "<tr><th>rule</th><th>verdict</th><th class=num>Sharpe</th>"
        "<th class=num>annual return</th><th class=num>max drawdown</th>"
        "<th class=num>vs default</th><th class=num>p</th><th class=num>edge</th>"
        "<th class=num>vs 1/N</th><th class=num>p</th><th class=num>edge</th>"
        "<th class=num>on the default</th><th class=num>changes</th></tr>"
    )
    rows = []
    for record in report.records:
        m = record.metrics
        cells = [
            f"<td>{escape(record.rule)}{' (decides)' if record.rule == report.rule else ''}</td>",
            f"<td class={'pass' if record.go else 'fail'}>{'GO' if record.go else 'NO-GO'}</td>",
            f"<td class=num>{_num(m.get('sharpe'), '.3f')}</td>",
            f"<td class=num>{_num(m.get('annual_return'), '.2%')}</td>",
            f"<td class=num>{_num(m.get('max_drawdown'), '.2%')}</td>",
        ]
        for ref, _ in _REFERENCES:
            diff, p = _test(record, ref)
            edge = _num(record.detectable.get(ref), "+.2f")
            cells += [f"<td class=num>{diff}</td><td class=num>{p}</td><td class=num>{edge}</td>"]
        cells += [f"<td class=num>{record.n_default}</td><td class=num>{record.n_changes}</td>"]
        rows.append(f"<tr>{''.join(cells)}</tr>")
    return (
        "<p class=muted>Every rule traded the same epochs' sessions; each record is that rule's "
        "periods end to end, tested against the default and 1/N (one-sided paired Sharpe test; "
        "edge: the minimum detectable edge; none: every epoch traded the default config, so "
        "there is no difference to test; on the default: epochs that traded it; changes: "
        "epochs whose pick differs from the epoch before's).</p>"
        f"<div class=scroll><table id=records>{head}{''.join(rows)}</table></div>"
    )


def _epochs(report: WalkReport) -> str:
    head = (
        "<tr><th>#</th><th>period</th><th>traded</th><th>new pick</th><th class=num>Sharpe</th>"
        "<th class=num>default</th><th class=num>1/N</th><th>session</th></tr>"
    )
    rows = []
    names = config_names(report.epochs)
    for e in report.epochs:
        traded = traded_name(e, names)
        if e.trial_id is not None:
            traded = f"{traded}: trial {e.trial_id} ({escape(e.config_hash[:8])})"
        rows.append(
            f"<tr><td class=num>{e.epoch}</td><td>{escape(e.start)} .. {escape(e.end)}</td>"
            f"<td>{traded}</td><td>{'yes' if e.changed else ''}</td>"
            f"<td class=num>{_num(e.sharpe_pick, '.2f')}</td>"
            f"<td class=num>{_num(e.sharpe_default, '.2f')}</td>"
            f"<td class=num>{_num(e.sharpe_equal_weight, '.2f')}</td>"
            f"<td>{escape(e.session_id)}</td></tr>"
        )
    return f"<div class=scroll><table id=epochs>{head}{''.join(rows)}</table></div>"


def _pairs(report: WalkReport) -> str:
    p = report.pairs
    text = f"{p.n_pairs} pair(s) labelled by the period after their epoch"
    if p.n_checked:
        text += f"; the period after that agreed on {p.n_agree} of {p.n_checked}"
    elapsed = "" if report.elapsed_s is None else f" The walk ran for {report.elapsed_s:.0f} s."
    return f"<p>{escape(text)}.{escape(elapsed)}</p>"


__all__ = ["walk_html"]
