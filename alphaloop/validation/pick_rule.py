"""How a session's pick is chosen from its configs: the rule, and its level.

- ``strict`` (the default): the best kept config, by the keep rule's score, among those that
  beat the default on the folds' days by Romano & Wolf's StepM at the family-wise level
  ``level`` over every config the search tried (:func:`~alphaloop.validation.stepm.stepm`).
  A lone session has nothing after it to catch a wrong pick, so its pick must pass this test;
  where nothing does, the pick is the default ("no improvement found").
- ``lenient``: the best-estimated config, no test: the best fold score among the search
  configs scored on every fold, if it is above the default's (its mean over the baseline
  seeds). A loop that re-researches and trades each pick out of sample catches a wrong pick
  there, so its epochs may trade more of what the search found; how much that buys is measured
  by a walk, between the two rules.

Both choose only among configs within the session's limits.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["PICK_RULES", "PickRule"]

PICK_RULES: tuple[str, ...] = ("strict", "lenient")


class PickRule(BaseModel):
    """The rule a session's pick is chosen by (see the module docstring).

    Attributes:
        rule: ``strict`` (StepM against the default) or ``lenient`` (the best estimate).
        level: the strict rule's family-wise error rate (unused by the lenient rule).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    rule: Literal["strict", "lenient"] = "strict"
    level: float = Field(default=0.05, gt=0, lt=1)

    def describe(self) -> str:
        """``strict (StepM, family-wise 5%)`` or ``lenient (the best estimate, no test)``."""
        if self.rule == "lenient":
            return "lenient (the best estimate, no test)"
        return f"strict (StepM, family-wise {self.level:g})"
