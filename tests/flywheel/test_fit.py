"""Fitting a research prompt to a limit: the knob table, the best trial and the most recent
history stay, the oldest entries go first, and a note says how many went."""

from __future__ import annotations

import json
import re

from alphaloop.flywheel.fit import context_length, fit_prompt

from .prompts import BEST, research_prompt


def _nbytes(prompt: str) -> int:
    return len(prompt.encode())


def _user(prompt: str) -> str:
    return json.loads(prompt)[1]["content"]


def _section(text: str, heading: str) -> list[str]:
    lines = text.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith(heading))
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    return lines[start + 1 : end]


def _trials(text: str) -> list[int]:
    """Trial indexes of every history entry left (table rows, failure and clip lines)."""
    return [
        int(m.group(1) or m.group(2))
        for m in re.finditer(r"^(?:\| (\d+) \|| *- trial (\d+)\b)", text, flags=re.M)
    ]


def test_a_prompt_that_fits_is_left_as_it_is() -> None:
    prompt = research_prompt()
    fitted = fit_prompt(prompt, _nbytes, _nbytes(prompt))
    assert fitted.prompt == prompt and fitted.cut == 0 and fitted.length == _nbytes(prompt)


def test_fitting_keeps_the_knob_table_and_the_best_and_recent_trials() -> None:
    prompt = research_prompt()
    full, floor = _nbytes(prompt), fit_prompt(prompt, _nbytes, 0).length
    limit = (full + floor) // 2
    fitted = fit_prompt(prompt, _nbytes, limit)
    assert fitted.length == _nbytes(fitted.prompt) <= limit < full
    before, after = _user(prompt), _user(fitted.prompt)
    assert json.loads(fitted.prompt)[0] == json.loads(prompt)[0]  # system prompt untouched
    knobs = "## Knobs (current best config)"
    assert _section(after, knobs) == _section(before, knobs)
    # The cut entries are the oldest ones, the best trial stays whatever its age.
    old, kept = _trials(before), _trials(after)
    assert BEST in kept and max(old) in kept
    gone = sorted(set(old) - set(kept))
    assert len(old) - len(kept) == fitted.cut > 0
    assert max(gone) <= min(t for t in kept if t != BEST)
    # Each section cut from says how many of its entries went.
    notes = re.findall(r"\((\d+) older (trial|failure|clip)\(s\) cut", after)
    assert sum(int(n) for n, _ in notes) == fitted.cut


def test_the_fewest_entries_are_cut() -> None:
    prompt = research_prompt()
    full, floor = _nbytes(prompt), fit_prompt(prompt, _nbytes, 0).length
    for limit in range(floor, full, 97):
        tried: list[str] = []

        def length(text: str, tried: list[str] = tried) -> int:
            tried.append(text)
            return _nbytes(text)

        fitted = fit_prompt(prompt, length, limit)
        assert fitted.length <= limit and tried[-1] == fitted.prompt
        # Every candidate with fewer entries cut was tried first and was too long.
        counts = [len(_trials(_user(prompt))) - len(_trials(_user(t))) for t in tried]
        assert counts == list(range(fitted.cut + 1))
        assert all(_nbytes(t) > limit for t in tried[:-1])


def test_past_the_floor_everything_but_the_best_is_cut() -> None:
    prompt = research_prompt()
    fitted = fit_prompt(prompt, _nbytes, 100)
    assert fitted.length > 100  # does not fit: the caller refuses it
    assert _trials(_user(fitted.prompt)) == [BEST]
    assert "## Knobs (current best config)" in _user(fitted.prompt)


def test_plain_text_prompts_are_fitted_too() -> None:
    text = _user(research_prompt())
    fitted = fit_prompt(text, _nbytes, _nbytes(text) - 200)
    assert fitted.cut > 0 and not fitted.prompt.startswith("[")
    assert fitted.length <= _nbytes(text) - 200


def test_context_length_from_a_config() -> None:
    assert context_length({"max_position_embeddings": 8192, "n_positions": 1024}) == 8192
    assert context_length({"n_positions": 256}) == 256
    assert context_length({"hidden_size": 64}) is None
