"""``alphaloop --help`` (and each group's) lists every command on one line: a command's summary
is the first line of its help, and the detail belongs in its own ``--help``."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import pairwise
from typing import Any

import pytest
import typer.main
from typer.testing import CliRunner

from alphaloop.cli import app
from alphaloop.cli._app import reflow

MAX_SUMMARY = 90  # characters: with the command's name it fits a 120-column terminal


def _commands(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    for name, sub in getattr(command, "commands", {}).items():
        yield (*path, name), sub
        yield from _commands(sub, (*path, name))


COMMANDS = list(_commands(typer.main.get_command(app)))
GROUPS = [()] + [path for path, c in COMMANDS if getattr(c, "commands", None)]


@pytest.mark.parametrize("path", [p for p, _ in COMMANDS], ids=" ".join)
def test_a_summary_is_one_line(path: tuple[str, ...]) -> None:
    command = dict(COMMANDS)[path]
    summary = (command.help or "").strip().split("\n\n")[0]
    assert summary and "\n" not in summary, f"alphaloop {' '.join(path)}: {summary!r}"
    assert len(summary) <= MAX_SUMMARY, f"alphaloop {' '.join(path)}: {len(summary)} chars"


@pytest.mark.parametrize("group", GROUPS, ids=lambda g: " ".join(g) or "alphaloop")
def test_the_commands_panel_has_one_line_a_command(group: tuple[str, ...]) -> None:
    result = CliRunner().invoke(app, [*group, "--help"], env={"COLUMNS": "120"}, color=False)
    assert result.exit_code == 0, result.output
    panel = result.stdout.split("Commands")[1].split("\u2570")[0]
    rows = [line for line in panel.splitlines()[1:] if line.strip("\u2502 ")]
    listed = [p[-1] for p, _ in COMMANDS if p[:-1] == group]
    assert [row.strip("\u2502 ").split()[0] for row in rows] == listed, panel


@pytest.mark.parametrize("path", [p for p, c in COMMANDS if not getattr(c, "commands", None)],
                         ids=" ".join)  # fmt: skip
def test_a_wide_terminal_gets_each_paragraph_on_one_line(path: tuple[str, ...]) -> None:
    """A docstring's line breaks are not the terminal's: at 200 columns no paragraph of the
    description breaks, except before a list item."""
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "200"}, color=False)
    assert result.exit_code == 0, result.output
    description = result.stdout.split("Usage:")[1].split("\u256d")[0]
    lines = [line.strip() for line in description.splitlines()[1:]]
    broken = [
        (line, after)
        for line, after in pairwise(lines)
        if line and after and not after.startswith(("-", "*")) and len(line) < 150
    ]
    assert not broken, f"alphaloop {' '.join(path)}: a paragraph breaks after {broken[0][0]!r}"


def test_reflow_joins_lines_and_keeps_lists_apart() -> None:
    doc = """First line.

        A paragraph written
        on two lines:
        - an item
        - another
          indented

        Example: x
        """
    assert reflow(doc) == (
        "First line.\n\nA paragraph written on two lines:\n- an item\n- another\n  indented"
        "\n\nExample: x"
    )
