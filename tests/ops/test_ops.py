"""The operations layer on an empty home: answers, and errors the front ends word themselves."""

from __future__ import annotations

from pathlib import Path

import pytest

from alphaloop import ops
from alphaloop.exceptions import AlphaloopError, InvalidRequest, NoJournal
from alphaloop.settings import Settings


def test_an_empty_home_has_no_sessions(settings: Settings) -> None:
    assert ops.sessions.list_sessions(settings) == []
    assert ops.sessions.session_status(settings) is None
    with pytest.raises(NoJournal) as caught:
        ops.sessions.list_sessions(settings, missing_ok=False)
    assert caught.value.path == settings.journal_path
    with pytest.raises(NoJournal):
        ops.sessions.session_review(settings, "s-nope")
    assert not settings.journal_path.exists()  # a read never creates the journal


def test_knobs_by_name_and_mode() -> None:
    assert len(ops.knobs.list_knobs()) == 16
    cvar = ops.knobs.list_knobs(mode="cufolio_only")
    assert {k.group for k in cvar} == {"cvar"}
    assert all("cufolio_only" in k.used_in_modes for k in cvar)
    with pytest.raises(InvalidRequest, match="unknown knobs alpha_boost"):
        ops.knobs.list_knobs(["gamma", "alpha_boost"])


def test_chart_inputs_are_checked_before_drawing(tmp_path: Path) -> None:
    assert ops.charts.chart_kind("training-curve") == "training_curve"
    with pytest.raises(InvalidRequest):
        ops.charts.chart_kind("pie")
    assert ops.charts.check_export(None) == ("html", (1100, 620))
    assert ops.charts.check_export(tmp_path / "c.png", 800, 400) == ("png", (800, 400))
    with pytest.raises(AlphaloopError):
        ops.charts.check_export(tmp_path / "c.pdf")
