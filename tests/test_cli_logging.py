"""``-v`` / ``-vv`` on the root command: alphaloop's log records go to stderr, never stdout."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest
from typer.testing import CliRunner

from alphaloop.cli import app
from alphaloop.cli._logging import configure_logging


@pytest.fixture(autouse=True)
def quiet_afterwards() -> Iterator[None]:
    yield
    configure_logging(0)


@pytest.mark.parametrize(
    ("flags", "level"),
    [([], logging.WARNING), (["-v"], logging.INFO), (["-vv"], logging.DEBUG)],
)
def test_verbosity_sets_the_level(flags: list[str], level: int) -> None:
    result = CliRunner().invoke(app, [*flags, "knobs", "--json"])
    assert result.exit_code == 0, result.output
    assert len(json.loads(result.stdout)) == 16
    assert logging.getLogger("alphaloop").getEffectiveLevel() == level


def test_records_go_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    assert CliRunner().invoke(app, ["-vv", "knobs", "--json"]).exit_code == 0
    logging.getLogger("alphaloop.probe").debug("probe record")
    logging.getLogger("alphaloop.probe").info("info record")
    out, err = capsys.readouterr()
    assert "probe record" in err and "info record" in err
    assert "record" not in out


def test_default_shows_warnings_only(capsys: pytest.CaptureFixture[str]) -> None:
    assert CliRunner().invoke(app, ["knobs", "--json"]).exit_code == 0
    logging.getLogger("alphaloop.probe").info("hidden")
    logging.getLogger("alphaloop.probe").warning("shown")
    _, err = capsys.readouterr()
    assert "shown" in err and "hidden" not in err
