"""A tear sheet of a finished session or of a library policy (``alphaloop report``): the pick
against the default config and 1/N on the sealed TEST window, its allocation and turnover, the
gates with the test that decided each, how the search went, and the notes.

The TEST series are the journal's (the rows finalize wrote when it evaluated each config once
on TEST); 1/N's series, and each book's weights and turnover day by day, are replayed with the
frozen evaluator and checked against the journal (:mod:`alphaloop.ops.series`), as a chart of a
trial is. :func:`build_tearsheet` gives the sheet's typed content with its figures, so a page
can show the same sheet; :func:`write_tearsheet` writes it as one HTML file, or its figures as
PNGs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import plotly.graph_objects as go
from pydantic import BaseModel, ConfigDict

from alphaloop.charts.series import Allocation, WindowReturns
from alphaloop.charts.tearsheet import SearchSummary, SheetLine, TearSheet
from alphaloop.exceptions import InvalidRequest, check_folder
from alphaloop.journal import (
    FinalReport,
    Journal,
    PolicyRecord,
    SessionRecord,
    TrialKind,
    TrialRecord,
    TrialStatus,
    jsonable,
)
from alphaloop.ops._journal import open_journal
from alphaloop.ops.objective import objective_view
from alphaloop.settings import Settings

SheetFormat = Literal["html", "png"]
_FAILED = (TrialStatus.crash, TrialStatus.timeout)


class DrawnSheet(BaseModel):
    """A drawn sheet: its typed content (``sheet``) and its figures by name; a kind of sheet
    says its file stem (``name``) and its HTML document (``html``)."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    sheet: BaseModel
    figures: dict[str, go.Figure]

    @property
    def name(self) -> str:
        raise NotImplementedError

    def html(self) -> str:
        raise NotImplementedError

    def as_json(self) -> dict[str, Any]:
        """The sheet and its figures (plotly JSON, ``Plotly.newPlot(div, data, layout)``)."""
        return {
            "sheet": jsonable(self.sheet.model_dump(mode="json")),
            "figures": {k: json.loads(f.to_json()) for k, f in self.figures.items()},
        }


class Tearsheet(DrawnSheet):
    """A drawn tear sheet of a session or a policy."""

    sheet: TearSheet

    @property
    def name(self) -> str:
        """A file stem: ``tearsheet-s-20260101-120000-ab12`` or ``tearsheet-policy-3``."""
        if self.sheet.policy_id is not None:
            return f"tearsheet-policy-{self.sheet.policy_id}"
        return f"tearsheet-{self.sheet.session_id}"

    def html(self) -> str:
        from alphaloop.charts.tearsheet_html import tearsheet_html

        return tearsheet_html(self.sheet, self.figures)


class WrittenSheet(BaseModel):
    """Where a tear sheet was written: one HTML file, or one PNG per figure."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    format: SheetFormat
    paths: list[Path]


def build_tearsheet(
    settings: Settings, session_id: str | None = None, *, policy_id: int | None = None
) -> Tearsheet:
    """The tear sheet of session ``session_id``, or of library policy ``policy_id`` (the
    session it came from, with the policy's trial as the pick).

    Raises:
        ValueError: neither or both of ``session_id`` and ``policy_id``.
        NoJournal, NotFound, NotFound: nothing by that id.
        InvalidRequest: the session has no TEST evaluation (not finished, or a manual training
            run, which is never evaluated on TEST).
        AlphaloopError: the session's data changed since it ran, or a policy file is gone.
    """
    from alphaloop.charts.tearsheet import tearsheet_figures

    if (session_id is None) == (policy_id is None):
        raise ValueError("give a session id or a policy id (one of the two)")
    with open_journal(settings) as j:
        session, policy = _subject(j, session_id, policy_id)
        rows = j.trials.of_session(session.id, series=False)
        tests = _test_rows(j, session)
        pick_id, default_id = _evaluated(session, policy, tests)
        notes = _notes(j, session.id, pick_id, rows)
    pick_row = next(t for t in rows if t.id == pick_id)
    window, allocation, lines = _lines(session, pick_row, tests[pick_id], tests[default_id])
    final = _final(session)
    view = objective_view(session)
    outside = (view.admissible_reason or view.limits) if view.admissible is False else None
    sheet = TearSheet(
        title=_title(session, policy),
        session_id=session.id,
        goal=session.goal,
        mode=session.mode,
        data=session.data_source,
        policy_id=policy.id if policy else None,
        start_date=window.start_date,
        dates=window.dates,
        lines=lines,
        allocation=allocation,
        gates=final.gates,
        gates_summary=final.gates_summary or final.gates_note,
        search=_search(session, final, rows, pick_row),
        notes=notes,
        limits=view.limits,
        max_drawdown=view.max_drawdown,
        outside_limits=outside,
    )
    return Tearsheet(sheet=sheet, figures=tearsheet_figures(sheet, pick_row))


def _lines(
    session: SessionRecord, pick: TrialRecord, pick_test: TrialRecord, default_test: TrialRecord
) -> tuple[WindowReturns, Allocation, list[SheetLine]]:
    """The pick's, the default's and 1/N's TEST series (the journal's; 1/N's and each book's
    turnover and weights replayed and checked against it), the pick first."""
    from alphaloop.ops.series import SessionSeries, on_window

    replay = SessionSeries()
    window = replay.window_returns(session, pick_test)
    same = pick_test.id == default_test.id
    allocation = replay.allocation(session, pick_test)
    lines = [
        SheetLine(
            role="pick",
            label=f"trial #{pick.idx}" + (" (the default config)" if same else ""),
            returns=window.strategy,
            metrics=pick_test.metrics or {},
            turnover=allocation.turnover,
        )
    ]
    if not same:
        lines.append(
            SheetLine(
                role="default",
                label="default config",
                returns=on_window(default_test, len(window.dates)),
                metrics=default_test.metrics or {},
                turnover=replay.allocation(session, default_test).turnover,
            )
        )
    lines.append(
        SheetLine(
            role="equal_weight",
            label="equal weight",
            returns=window.baselines["equal_weight"],
            metrics=(pick_test.baselines or {}).get("equal_weight", {}),
        )
    )
    return window, allocation, lines


def _subject(
    j: Journal, session_id: str | None, policy_id: int | None
) -> tuple[SessionRecord, PolicyRecord | None]:
    if policy_id is None:
        assert session_id is not None
        return j.sessions.get(session_id), None
    policy = j.policies.get(policy_id)
    return j.sessions.get(policy.session_id), policy


def _final(session: SessionRecord) -> FinalReport:
    if session.final is None:
        raise InvalidRequest(
            f"session {session.id} is {session.status}: it has no TEST evaluation yet; "
            "a tear sheet needs a finished session"
        )
    return session.final


def _test_rows(j: Journal, session: SessionRecord) -> dict[int, TrialRecord]:
    """The session's TEST evaluations that produced returns, by the trial they evaluated."""
    _final(session)
    return {
        t.parent_id: t
        for t in j.trials.of_session(session.id, kind=TrialKind.test)
        if t.parent_id is not None and t.val_returns
    }


def _evaluated(
    session: SessionRecord, policy: PolicyRecord | None, tests: dict[int, TrialRecord]
) -> tuple[int, int]:
    """(the pick's trial id, the default's): both evaluated on TEST, or InvalidRequest."""
    final = _final(session)
    pick = policy.trial_id if policy is not None else session.best_trial_id
    default = final.baseline_trial_id
    if pick is None or default is None or pick not in tests or default not in tests:
        what = f"policy {policy.id}'s trial" if policy is not None else "its pick"
        raise InvalidRequest(
            f"session {session.id} has no TEST evaluation of {what} and of the default config "
            f"(a manual training run is never evaluated on TEST; {final.stop_reason})"
        )
    return pick, default


def _search(
    session: SessionRecord, final: FinalReport, rows: list[TrialRecord], pick: TrialRecord
) -> SearchSummary:
    search = [t for t in rows if t.kind == TrialKind.search]
    return SearchSummary(
        proposer=session.proposer,
        n_trials=final.n_trials,
        n_kept=sum(t.status == TrialStatus.keep for t in search),
        n_discarded=sum(t.status == TrialStatus.discard for t in search),
        n_failed=sum(t.status in _FAILED for t in search),
        n_invalid=sum(t.status == TrialStatus.invalid for t in search),
        n_folds=final.folds.n if final.folds is not None else None,
        stop_reason=final.stop_reason,
        pick=final.pick,
        pick_reason=final.pick_reason,
        pick_trial_idx=pick.idx,
    )


def _notes(j: Journal, session_id: str, pick_id: int, rows: list[TrialRecord]) -> list[str]:
    """The current text of the session's note and of its trials' notes, the session's first."""
    out = []
    session_note = j.notes.versions(session_id)
    if session_note and session_note[-1].text.strip():
        out.append(session_note[-1].text)
    for t in rows:
        versions = j.notes.versions(session_id, t.id)
        if versions and versions[-1].text.strip():
            mark = " (the pick)" if t.id == pick_id else ""
            out.append(f"trial #{t.idx}{mark}: {versions[-1].text}")
    return out


def _title(session: SessionRecord, policy: PolicyRecord | None) -> str:
    if policy is not None:
        return f"Tear sheet: policy #{policy.id} ({policy.kind.value}) from session {session.id}"
    return f"Tear sheet: session {session.id}"


def check_output(out: Path | None, fmt: SheetFormat) -> None:
    """Refuses, before anything is drawn, an ``out`` whose suffix is not the format's or whose
    folder does not exist.

    Raises:
        InvalidRequest: see above.
    """
    if out is None:
        return
    if out.suffix.lower() != f".{fmt}":
        raise InvalidRequest(
            f"--out {out.name!r} does not end in .{fmt}; a {fmt} tear sheet is written to a "
            f".{fmt} file (--format html or png)"
        )
    check_folder(out)


def write_tearsheet(
    drawn: DrawnSheet, settings: Settings, *, out: Path | None = None, fmt: SheetFormat = "html"
) -> WrittenSheet:
    """Writes ``drawn`` (a session's, a policy's or a walk's sheet) as one self-contained HTML
    file, or each figure as a PNG rendered by kaleido (``<out stem>-<figure>.png``); default
    ``<home>/charts/<sheet name>.<fmt>``.

    Raises:
        InvalidRequest: a bad ``out``.
        AlphaloopError, AlphaloopError: PNG asked for and no Chromium, or it failed.
    """
    from alphaloop.charts import write_atomically

    check_output(out, fmt)
    target = out or settings.charts_dir / f"{drawn.name}.{fmt}"
    target.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "html":
        write_atomically(target, drawn.html().encode("utf-8"))
        return WrittenSheet(format=fmt, paths=[target])
    from alphaloop.charts import find_chromium, render_pngs

    figures = drawn.figures
    pngs = render_pngs(list(figures.values()), chromium=find_chromium(settings.chromium))
    paths = [target.with_name(f"{target.stem}-{figure}.png") for figure in figures]
    for path, png in zip(paths, pngs, strict=True):
        write_atomically(path, png)
    return WrittenSheet(format=fmt, paths=paths)


__all__ = [
    "DrawnSheet",
    "Tearsheet",
    "WrittenSheet",
    "build_tearsheet",
    "check_output",
    "write_tearsheet",
]
