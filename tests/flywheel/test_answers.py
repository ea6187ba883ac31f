"""Answers of research pairs: a rationale a search algorithm wrote (TPE, random) is left out,
on both sides of the pair; a language model's or a person's is kept."""

from __future__ import annotations

import json

import pytest

from alphaloop.flywheel.research import machine_written, pair_answers
from alphaloop.journal import Journal, TrialRecord
from alphaloop.settings import Settings
from tests.journal.journal_helpers import new_session, new_trial

TPE_WARMUP = "TPE warm-up: random draw 6 of 8"


@pytest.fixture
def journal(settings: Settings) -> Journal:
    settings.home.mkdir(parents=True, exist_ok=True)
    with Journal(settings.journal_path) as j:
        yield j


def _trial(journal: Journal, sid: str, proposer: str, knob: float, rationale: str) -> TrialRecord:
    delta = {"changes": {"cvar_alpha": knob}, "rationale": rationale}
    return new_trial(journal, sid, proposer=proposer, delta=delta, rationale=rationale)


def test_tpe_pairs_carry_the_changes_alone(journal: Journal) -> None:
    sid = new_session(journal)
    a = _trial(journal, sid, "tpe", 0.95, TPE_WARMUP)
    b = _trial(journal, sid, "random", 0.9, "random search: uniform draw on each knob's scale")
    chosen, rejected = pair_answers(a, b)
    assert json.loads(chosen) == {"changes": {"cvar_alpha": 0.95}}
    assert json.loads(rejected) == {"changes": {"cvar_alpha": 0.9}}
    assert "warm-up" not in chosen + rejected


def test_an_llm_answer_against_a_fallback_loses_its_rationale_too(journal: Journal) -> None:
    sid = new_session(journal, proposer="llm")
    llm = _trial(journal, sid, "llm", 0.95, "a deeper tail steadies the solve")
    fallback = _trial(journal, sid, "tpe (fallback)", 0.9, f"{TPE_WARMUP} [LLM fallback: 503]")
    assert machine_written(fallback) and not machine_written(llm)
    chosen, rejected = pair_answers(llm, fallback)
    # The pair differs in its changes only: "has a rationale" cannot be what wins.
    assert set(json.loads(chosen)) == set(json.loads(rejected)) == {"changes"}


@pytest.mark.parametrize("proposer", ["llm", "manual"])
def test_written_rationales_are_kept(journal: Journal, proposer: str) -> None:
    sid = new_session(journal, proposer="llm")
    a = _trial(journal, sid, proposer, 0.95, "a deeper tail steadies the solve")
    b = _trial(journal, sid, "llm", 0.9, "fewer scenarios, faster solves")
    chosen, rejected = pair_answers(a, b)
    assert json.loads(chosen) == {
        "changes": {"cvar_alpha": 0.95},
        "rationale": "a deeper tail steadies the solve",
    }
    assert json.loads(rejected)["rationale"] == "fewer scenarios, faster solves"
