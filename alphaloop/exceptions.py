"""Every error alphaloop raises on purpose derives from :class:`AlphaloopError`.

A user-facing command catches ``AlphaloopError`` and prints its message; anything else is a bug.
"""

from __future__ import annotations


class AlphaloopError(Exception):
    """Base class of alphaloop's own errors."""


class InvalidDelta(AlphaloopError):
    """A proposed config delta names an unknown knob or carries a value that is not a number.

    Deliberately not a ``ValueError``: pydantic would wrap it into a ``ValidationError`` and the
    offending key and value would be lost to callers.
    """

    def __init__(self, message: str, *, key: str | None = None, value: object = None) -> None:
        super().__init__(message)
        self.key = key
        self.value = value


class DataError(AlphaloopError, ValueError):
    """Price data that cannot be used as given (missing file, bad dates, bad prices...)."""


class InfeasibleProblem(AlphaloopError, ValueError):
    """An optimisation problem whose constraints cannot all hold (the message says which)."""


class SolverError(AlphaloopError, RuntimeError):
    """A solver ran but returned no usable solution."""


class TrialCrashed(AlphaloopError, RuntimeError):
    """A trial could not finish (diverged policy, solver failure...); the journal marks it crash."""


class TrialTimeout(AlphaloopError, RuntimeError):
    """A trial ran past its time limit; the journal marks it timeout."""


class EvaluationWindowError(AlphaloopError, ValueError):
    """An explicit window the frozen evaluator cannot score: rows or dates outside the data, or
    no trading day between its dates."""


class LLMError(AlphaloopError):
    """A call to the LLM endpoint failed; the message says why and what to check.

    Attributes:
        status_code: the HTTP status of the last attempt, if the server answered.
        attempts: how many attempts were made before giving up.
    """

    def __init__(self, message: str, *, status_code: int | None = None, attempts: int = 1) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.attempts = attempts


class LLMNotConfigured(LLMError):
    """No endpoint base URL or model is set."""


class LLMAuthError(LLMError):
    """The endpoint rejected the API key (401/403); retrying cannot help."""


class LLMNotFound(LLMError):
    """Unknown model or wrong base URL (404); retrying cannot help."""


class LLMBadRequest(LLMError):
    """The endpoint refused the request as invalid (400/422); retrying cannot help."""


class ToolsUnsupported(LLMBadRequest):
    """The endpoint cannot do tool calling; callers fall back to JSON in the message text."""


class LLMUnavailable(LLMError):
    """Timeouts, refused connections, 429 or 5xx persisted through every retry."""


class LLMTimeout(LLMUnavailable):
    """Every attempt timed out."""


class LLMBadResponse(LLMError):
    """The endpoint answered 200 with a body that is not a chat completion."""


class ReplyParseError(AlphaloopError):
    """A model reply holds no usable JSON object.

    Attributes:
        reason: what was wrong.
        excerpt: the start of the offending text, for the journal and the error message.
    """

    def __init__(self, reason: str, text: str) -> None:
        flat = " ".join(text.split())
        self.reason = reason
        self.excerpt = flat if len(flat) <= 160 else flat[:157] + "..."
        super().__init__(f"{reason}: {self.excerpt!r}")


class JournalError(AlphaloopError):
    """The journal file cannot be used: not an alphaloop journal, written by a newer alphaloop,
    locked for too long, or a write that breaks its rules."""


class SessionNotFound(JournalError, LookupError):
    """No session with the given id; the message lists recent session ids."""


class TrialNotFound(JournalError, LookupError):
    """No trial with the given id."""


class SessionNotResumable(AlphaloopError, ValueError):
    """The session cannot be run again (a manual training run, for one)."""


class TrialNotRunning(JournalError):
    """``finish_trial`` on a trial that has already finished (or was reaped as interrupted)."""


class ChartError(AlphaloopError):
    """Base class of the chart errors."""


class UnknownChartKind(ChartError, ValueError):
    """A chart kind that does not exist (the message lists the kinds)."""


class ChartDataError(ChartError):
    """The chart does not apply to what was asked: a crashed trial has no equity curve, a
    Mean-CVaR trial has no training curve, an empty journal has no runs to rank."""


class ReplayError(ChartError):
    """A series the journal does not store could not be recomputed faithfully (the data or a
    policy file changed or is gone)."""


class ChromiumNotFound(ChartError):
    """PNG export needs a Chromium (or Chrome) and none was found."""


class ChartExportError(ChartError):
    """Writing a chart file failed (an unsupported suffix, a browser that would not render)."""


class PolicyNotFound(JournalError, LookupError):
    """No library entry with the given id; the message lists recent policy ids."""


class PolicyTampered(AlphaloopError):
    """A policy file's sha256 differs from the one the library journaled when it was published
    (or the file is gone). Refused before anything in it is unpickled: an SB3 zip carries
    pickled objects, and a file nobody vouches for must never be loaded."""


class ActivePolicyError(AlphaloopError):
    """The active-policy pointer file cannot be read (garbled, or naming no library entry)."""


class ReplayWindowError(AlphaloopError, ValueError):
    """A replay window the data cannot serve (outside its dates, too short, reversed)."""


class FlywheelError(AlphaloopError):
    """Base class of the preference flywheel's errors (decisions' verdicts, pairs, DPO)."""


class DecisionNotFound(FlywheelError, LookupError):
    """No portfolio decision with the given id; the message lists the undecided ones."""


class InvalidVerdict(FlywheelError, ValueError):
    """A verdict that cannot be recorded: an unknown verdict, override weights that name an
    unknown symbol, are negative or sum above 1, or a decision that already has a verdict."""


class ModelDirError(FlywheelError, ValueError):
    """A directory that does not hold a local causal language model (config.json, weights and
    a tokenizer), or an output directory that cannot be used."""


class PmError(AlphaloopError):
    """The portfolio manager cannot tick: no active policy, no prices for the day, a book
    that does not exist."""


class BrokerError(PmError):
    """A broker could not be reached or refused to report the account (missing keys, 403)."""
