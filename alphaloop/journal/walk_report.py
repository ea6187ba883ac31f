"""What a walk found (``walks.report``) and what each of its epochs traded
(``walk_epochs.result``), typed.

A walk replays the research loop over history: at each epoch a session runs on the data cut at
the epoch, and its pick trades the period after it, next to the default config and 1/N on the
same days. :class:`EpochResult` holds one period's daily returns of each; :class:`WalkReport`
is the verdict over all of them end to end. Both are journaled as JSON and read back as these
models; every view (the CLI, the API, the page, the chat tools) reads them, never the JSON.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from alphaloop.evidence import ExcessEvidence, GateReport, NoEvidence

_FROZEN = ConfigDict(frozen=True, extra="forbid")

# The rules that choose what an epoch trades (see alphaloop.walk_spec.PickRule): the session's
# own pick, the best kept trial, or the best-estimated config.
RuleName = Literal["strict", "kept", "best"]


class Traded(BaseModel):
    """What one rule traded over one period: the config (None: the default) and its days.

    Attributes:
        trial_id: the epoch session's search trial traded, or None for the default config.
        config_hash: the traded config's hash.
        returns: daily returns over the period, at the evaluation cost.
    """

    model_config = _FROZEN

    trial_id: int | None
    config_hash: str
    returns: tuple[float, ...]


class EpochResult(BaseModel):
    """One epoch: the period after it, and what traded there.

    Attributes:
        epoch: its index in the walk, from 0.
        session_id: the session that researched it.
        start, end: the period's first and last trading day (ISO dates).
        dates: every trading day of the period, in order.
        default, equal_weight: the default config's and 1/N's daily returns over the period.
        picks: by rule, what the rule traded (the strict rule's is the session's own pick).
        candidates: the epoch's search trials scored on every fold, as (trial id, fold score),
            best first: what the rules chose from.
    """

    model_config = _FROZEN

    epoch: int = Field(ge=0)
    session_id: str
    start: str
    end: str
    dates: tuple[str, ...]
    default: tuple[float, ...]
    equal_weight: tuple[float, ...]
    picks: dict[RuleName, Traded]
    candidates: tuple[tuple[int, float], ...] = ()


class EpochLine(BaseModel):
    """One epoch as the report lists it.

    Attributes:
        epoch, session_id, start, end: as in :class:`EpochResult`.
        trial_id: what the walk's rule traded (None: the default config).
        changed: whether it differs from the epoch before's (the first epoch: from the default).
        sharpe_pick, sharpe_default, sharpe_equal_weight: annualised Sharpe ratios over the
            period.
    """

    model_config = _FROZEN

    epoch: int
    session_id: str
    start: str
    end: str
    trial_id: int | None
    config_hash: str
    changed: bool
    sharpe_pick: float | None
    sharpe_default: float | None
    sharpe_equal_weight: float | None


class RuleRecord(BaseModel):
    """The out-of-sample record of one rule: its periods end to end, against the references.

    Attributes:
        rule: which rule.
        metrics: the record's metrics (Sharpe, drawdown, hit rate, profit factor, ...).
        excess: per reference (``default``, ``equal_weight``), the paired Sharpe-difference
            test over every out-of-sample day, or why there is none.
        detectable: per reference, the minimum detectable edge: the Sharpe difference the test
            detects with 80% power at its level, given the record's length and the observed
            correlations (annualised).
        gates: the go/no-go gates on the record; ``go`` whether all passed.
        n_default: epochs that traded the default config; ``n_changes``: epochs whose pick
            differs from the epoch before's.
    """

    model_config = _FROZEN

    rule: RuleName
    metrics: dict[str, float | None]
    excess: dict[str, ExcessEvidence | NoEvidence]
    detectable: dict[str, float | None]
    gates: GateReport
    go: bool
    n_default: int
    n_changes: int


class PairTally(BaseModel):
    """Preference pairs labelled by the period after their epoch.

    Attributes:
        n_pairs: pairs labelled.
        n_checked: pairs whose two configs were traded over the period after that too.
        n_agree: of those, how many the later period ranked the same way.
    """

    model_config = _FROZEN

    n_pairs: int = 0
    n_checked: int = 0
    n_agree: int = 0

    @property
    def agreement(self) -> float | None:
        return self.n_agree / self.n_checked if self.n_checked else None


class WalkReport(BaseModel):
    """A finished walk's verdict (see docs/how-a-session-decides.md, "The walk").

    Attributes:
        rule: the rule whose record decides the verdict.
        cadence: yearly, quarterly or monthly.
        first_day, last_day, n_days: the out-of-sample record's span and length.
        epochs: each epoch as traded under ``rule``.
        records: every rule's record (``rule``'s first), so rules compare on the same sessions.
        verdict: one line: GO or NO-GO, the tests that decided, and the minimum detectable
            edges.
        go: ``records[rule].go``.
        test_looks: how many times these days were looked at: once (each out-of-sample day
            belongs to one period and is evaluated once).
        pairs: preference pairs labelled by the future.
        elapsed_s: wall time of the walk's runs.
    """

    model_config = _FROZEN

    rule: RuleName
    cadence: str
    first_day: str
    last_day: str
    n_days: int
    epochs: tuple[EpochLine, ...]
    records: tuple[RuleRecord, ...]
    verdict: str
    go: bool
    test_looks: int = 1
    pairs: PairTally = Field(default_factory=PairTally)
    elapsed_s: float | None = None

    def record(self, rule: RuleName | None = None) -> RuleRecord:
        """The record of ``rule`` (the walk's own by default)."""
        wanted = rule or self.rule
        return next(r for r in self.records if r.rule == wanted)
