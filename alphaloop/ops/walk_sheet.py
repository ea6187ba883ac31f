"""A walk's tear sheet (``alphaloop report WALK_ID``, and the page's walk view): its
out-of-sample record's equity and drawdowns against the default config and 1/N, the pick of
each epoch, each rule's record, the epochs, and the verdict with the edge it could detect.

The record's days are the journal's (what each epoch traded over its period, journaled when it
was traded), on the days the walk's tests ran (:func:`alphaloop.walk.record_days`); nothing is
replayed. :func:`build_walk_sheet` gives the sheet's typed content with its figures;
:func:`alphaloop.ops.tearsheet.write_tearsheet` writes it as one offline HTML file, or its
figures as PNGs, as it writes a session's.
"""

from __future__ import annotations

from typing import Any

from alphaloop.charts.walk import WalkSheet
from alphaloop.exceptions import InvalidRequest
from alphaloop.journal import SessionRecord, WalkRecord
from alphaloop.ops._journal import open_journal
from alphaloop.ops.tearsheet import DrawnSheet
from alphaloop.settings import Settings


class WalkTearsheet(DrawnSheet):
    """A drawn walk sheet (``write_tearsheet`` writes it, as it writes a session's)."""

    sheet: WalkSheet

    @property
    def name(self) -> str:
        """A file stem: ``tearsheet-w-20260101-120000-ab12``."""
        return f"tearsheet-{self.sheet.walk_id}"

    def html(self) -> str:
        from alphaloop.charts.walk_html import walk_html

        return walk_html(self.sheet, self.figures)


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
    session = walk.spec.session
    before = results[0].dates[: results[0].dates.index(days[0])]
    sheet = WalkSheet(
        title=f"Walk {walk.id}",
        walk_id=walk.id,
        goal=walk.goal,
        mode=session.mode,
        data=first.data_source,
        proposer=first.proposer,
        budget=session.budget,
        # the close before the first day of the record: the last of epoch 0's VALIDATION
        start_date=before[-1] if before else _val_end(first),
        dates=days,
        pick=pick.tolist(),
        default=default.tolist(),
        equal_weight=equal.tolist(),
        report=report,
    )
    return WalkTearsheet(sheet=sheet, figures=walk_figures(sheet))


def _val_end(epoch: SessionRecord) -> str:
    """The last day of an epoch session's VALIDATION: the walk set it on its spec."""
    spec = epoch.spec
    if spec is None or spec.val_end is None:  # the walk wrote it: only an unread spec lacks it
        raise InvalidRequest(
            f"session {epoch.id}: its spec does not read ({epoch.settings.unread})"
        )
    return spec.val_end


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


__all__ = ["WalkTearsheet", "build_walk_sheet"]
