"""The preference flywheel: people's verdicts on portfolio decisions and the research journal
become preference pairs, and DPO (TRL) trains the proposer model on them.

:mod:`.outcome` computes a decision's T+5 outcome, :mod:`.decisions` and :mod:`.research` turn
decisions and sessions into pairs, :mod:`.verdicts` checks a verdict, :mod:`.export` writes
TRL's format and :mod:`.dpo` trains: :mod:`.lengths` measures pairs in the model's tokens and
fits their prompts (:mod:`.fit`) to its ``max_length``, :mod:`.heldout` holds out a fifth and
measures preference accuracy with its interval. Nothing here opens the journal by itself:
the operations layer hands it in.
"""

from alphaloop.flywheel.decisions import label_decision
from alphaloop.flywheel.export import prompt_text, trl_row, write_jsonl
from alphaloop.flywheel.outcome import HORIZON, Outcome, t5_outcome
from alphaloop.flywheel.pairs import PairDraft
from alphaloop.flywheel.verdicts import check_verdict, parse_weights

__all__ = [
    "HORIZON",
    "Outcome",
    "PairDraft",
    "check_verdict",
    "label_decision",
    "parse_weights",
    "prompt_text",
    "t5_outcome",
    "trl_row",
    "write_jsonl",
]
