"""A walk's tear sheet (``alphaloop report WALK_ID``, and the page's walk view): its
out-of-sample record's equity and drawdowns against the default config and 1/N, the pick of
each epoch, each rule's record, the epochs, and the verdict with the edge it could detect.

The record's days are the journal's (what each epoch traded over its period, journaled when it
was traded), on the days the walk's tests ran (:func:`alphaloop.walk.record_days`); nothing is
replayed. :func:`build_walk_sheet` gives the sheet's typed content with its figures, and
:func:`write_walk_sheet` writes it as one offline HTML file, or its figures as PNGs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import plotly.graph_objects as go
from pydantic import BaseModel, ConfigDict

from alphaloop.charts.walk import WalkSheet
from alphaloop.exceptions import InvalidRequest
from alphaloop.journal import WalkRecord, jsonable
from alphaloop.ops._journal import open_journal
from alphaloop.ops.tearsheet import SheetFormat, WrittenSheet, write_sheet
from alphaloop.settings import Settings


class WalkTearsheet(BaseModel):
    """A drawn walk sheet: its typed content and its figures by name."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    sheet: WalkSheet
    figures: dict[str, go.Figure]

    @property
    def name(self) -> str:
        """A file stem: ``tearsheet-w-20260101-120000-ab12``."""
        return f"tearsheet-{self.sheet.walk_id}"

    def as_json(self) -> dict[str, Any]:
        """The sheet and its figures (plotly JSON, ``Plotly.newPlot(div, data, layout)``)."""
        return {
            "sheet": jsonable(self.sheet.model_dump(mode="json")),
            "figures": {k: json.loads(f.to_json()) for k, f in self.figures.items()},
        }


def build_walk_sheet(settings: Settings, walk_id: str) -> WalkTearsheet:
    """The tear sheet of finished walk ``walk_id``.

    Raises:
        NoJournal, NotFound: no such walk.
        InvalidRequest: the walk has not finished (no report yet).
    """
    from alphaloop.charts.walk import walk_figures
    from alphaloop.walk import record_days

    with open_journal(settings) as j:
        walk = j.walks.get(walk_id)
        report = _report(walk)
        epochs = j.walks.epochs(walk_id)
        first = j.sessions.get(epochs[0].session_id)
    results = [e.result for e in epochs if e.result is not None]
    days, pick, default, equal = record_days(results, report.rule)
    session = walk.spec["session"]
    before = results[0].dates[: results[0].dates.index(days[0])]
    sheet = WalkSheet(
        title=f"Walk {walk.id}",
        walk_id=walk.id,
        goal=walk.goal,
        mode=session["mode"],
        data=first.data_source,
        proposer=first.proposer,
        budget=int(session["budget"]),
        # the close before the first day of the record: the last of epoch 0's VALIDATION
        start_date=before[-1] if before else first.settings["spec"]["val_end"],
        dates=days,
        pick=pick.tolist(),
        default=default.tolist(),
        equal_weight=equal.tolist(),
        report=report,
    )
    return WalkTearsheet(sheet=sheet, figures=walk_figures(sheet))


def _report(walk: WalkRecord) -> Any:
    if walk.report is None:
        how = (
            f"resume it with `alphaloop walk resume {walk.id}`"
            if walk.status != "running"
            else "wait for it to finish"
        )
        raise InvalidRequest(
            f"walk {walk.id} is {walk.status.value}: it has no report yet; {how} "
            "(a tear sheet needs a finished walk)"
        )
    return walk.report


def write_walk_sheet(
    drawn: WalkTearsheet, settings: Settings, *, out: Path | None = None, fmt: SheetFormat = "html"
) -> WrittenSheet:
    """Writes ``drawn`` as one self-contained HTML file, or each figure as a PNG rendered by
    kaleido; default ``<home>/charts/<sheet name>.<fmt>``.

    Raises:
        InvalidRequest: a bad ``out``.
        AlphaloopError: PNG asked for and no Chromium, or it failed.
    """
    from alphaloop.charts.walk_html import walk_html

    return write_sheet(
        drawn.name,
        lambda: walk_html(drawn.sheet, drawn.figures),
        drawn.figures,
        settings,
        out=out,
        fmt=fmt,
    )


__all__ = ["WalkTearsheet", "build_walk_sheet", "write_walk_sheet"]
