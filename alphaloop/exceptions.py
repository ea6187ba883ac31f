"""Every error alphaloop raises on purpose derives from :class:`AlphaloopError`.

Each class carries the answer every front end gives it, so there is one error table:
``exit_code`` for the command line (1: the work failed, 2: bad usage) and ``http_status`` for the
REST API (404 no such thing, 409 the current state forbids it, 422 bad input, 500 a failure,
503 a service it needs is unavailable: try later). The CLI, the server and the chat tools all ask
:func:`exit_code_of` and :func:`http_status_of`; none keeps a map of its own.

Errors that are not alphaloop's are bugs (exit 1, HTTP 500), with one exception decided here:
a ``ValueError`` (pydantic's ``ValidationError`` is one) is how input validation names a bad
value, so a front end that catches one answers bad usage (exit 2, HTTP 422).
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_CODES = frozenset({EXIT_FAILURE, EXIT_USAGE})
USAGE_STATUS = 422
FAILURE_STATUS = 500
HTTP_STATUSES = frozenset({404, 409, USAGE_STATUS, FAILURE_STATUS, 503})


class AlphaloopError(Exception):
    """Base class of alphaloop's own errors: a failure (exit 1, HTTP 500) unless a subclass
    says otherwise."""

    exit_code: ClassVar[int] = EXIT_FAILURE
    http_status: ClassVar[int] = FAILURE_STATUS


def exit_code_of(err: BaseException) -> int:
    """The exit code a command ends with when ``err`` stops it: 2 bad usage, 1 a failure."""
    if isinstance(err, AlphaloopError):
        return err.exit_code
    return EXIT_USAGE if isinstance(err, ValueError) else EXIT_FAILURE


def http_status_of(err: BaseException) -> int:
    """The HTTP status the REST API answers ``err`` with (the chat tools report it too)."""
    if isinstance(err, AlphaloopError):
        return err.http_status
    return USAGE_STATUS if isinstance(err, ValueError) else FAILURE_STATUS


class DataWarning(UserWarning):
    """Something about the data was changed on load (rows sorted, prices filled); the message
    says what. A warning, not an error: the command goes on, and front ends show it."""


class NoJournal(AlphaloopError):
    """No journal exists yet in the alphaloop home: no session or run has been started there.

    Front ends word it for their users (``path`` says where it was looked for).
    """

    exit_code = EXIT_USAGE
    http_status = 404

    def __init__(self, path: Path) -> None:
        super().__init__(f"no journal yet at {path}: no research session has been run in this home")
        self.path = path


class Conflict(AlphaloopError):
    """What was asked clashes with what runs now: resuming a session another process runs,
    stopping one nothing runs, starting a second scheduler."""

    exit_code = EXIT_USAGE
    http_status = 409


class InvalidRequest(AlphaloopError, ValueError):
    """A request refused as a whole before anything is written: the message names the value
    that cannot be used and what to give instead (an export's unknown session, a storage URL
    its library refuses, a study name another session's export holds)."""

    exit_code = EXIT_USAGE
    http_status = USAGE_STATUS


class InvalidDelta(AlphaloopError):
    """A proposed config delta names an unknown knob or carries a value that is not a number.

    Deliberately not a ``ValueError``: pydantic would wrap it into a ``ValidationError`` and the
    offending key and value would be lost to callers.
    """

    exit_code = EXIT_USAGE
    http_status = USAGE_STATUS

    def __init__(self, message: str, *, key: str | None = None, value: object = None) -> None:
        super().__init__(message)
        self.key = key
        self.value = value


class DataError(AlphaloopError, ValueError):
    """Price data that cannot be used as given (missing file, bad dates, bad prices...)."""

    exit_code = EXIT_USAGE
    http_status = USAGE_STATUS


class InfeasibleProblem(AlphaloopError, ValueError):
    """An optimisation problem whose constraints cannot all hold (the message says which)."""

    exit_code = EXIT_USAGE
    http_status = USAGE_STATUS


class SolverError(AlphaloopError, RuntimeError):
    """A solver ran but returned no usable solution."""


class ClusterUnavailable(AlphaloopError):
    """A Ray cluster a session was to run on does not answer, refuses this process, has nodes
    that cannot run its trials, or keeps losing them: the message names the address (and the
    node) and what to do. Raised before anything is journaled, or, mid-session, as the reason
    the session stopped (it resumes elsewhere)."""

    http_status = 503


class TrialCrashed(AlphaloopError, RuntimeError):
    """A trial could not finish (diverged policy, solver failure...); the journal marks it crash."""


class TrialTimeout(AlphaloopError, RuntimeError):
    """A trial ran past its time limit; the journal marks it timeout."""


class EvaluationWindowError(AlphaloopError, ValueError):
    """An explicit window the frozen evaluator cannot score: rows or dates outside the data, or
    no trading day between its dates."""

    exit_code = EXIT_USAGE
    http_status = USAGE_STATUS


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
    """No endpoint base URL or model is set: the message names the settings to set."""

    # What was asked needs an endpoint this installation lacks: ask for something else (another
    # proposer) or configure one. Not a failure of the server, and retrying cannot help.
    exit_code = EXIT_USAGE
    http_status = USAGE_STATUS


class LLMAuthError(LLMError):
    """The endpoint rejected the API key (401/403); retrying cannot help."""


class LLMNotFound(LLMError):
    """Unknown model or wrong base URL (404); retrying cannot help."""


class LLMBadRequest(LLMError):
    """The endpoint refused the request as invalid (400/422); retrying cannot help."""


class ToolsUnsupported(LLMBadRequest):
    """The endpoint cannot do tool calling; callers fall back to JSON in the message text."""


class ImagesUnsupported(LLMBadRequest):
    """The model takes no image input; chart reads use the embedded reader instead."""


class ResponseFormatUnsupported(LLMBadRequest):
    """The endpoint refuses ``response_format`` json_schema; callers ask for plain JSON."""


class LLMUnavailable(LLMError):
    """Timeouts, refused connections, 429 or 5xx persisted through every retry."""

    # The endpoint is down or overloaded, not this server broken: a client may try later.
    http_status = 503


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

    exit_code = EXIT_USAGE
    http_status = 404


class JournalLocked(JournalError):
    """Another writer held the journal's lock past the busy timeout; trying later can work."""

    http_status = 503


class JobNotFound(JournalError, LookupError):
    """No job with the given id."""

    exit_code = EXIT_USAGE
    http_status = 404


class TrialNotFound(JournalError, LookupError):
    """No trial with the given id."""

    exit_code = EXIT_USAGE
    http_status = 404


class SessionNotResumable(AlphaloopError, ValueError):
    """The session cannot be run again (a manual training run, for one)."""

    exit_code = EXIT_USAGE
    http_status = USAGE_STATUS


class TrialNotRunning(JournalError):
    """``journal.trials.finish`` on a trial that has already finished (or was reaped as
    interrupted)."""


class ChartError(AlphaloopError):
    """Base class of the chart errors."""


class UnknownChartKind(ChartError, ValueError):
    """A chart kind that does not exist (the message lists the kinds)."""

    exit_code = EXIT_USAGE
    http_status = USAGE_STATUS


class ChartDataError(ChartError):
    """The chart does not apply to what was asked: a crashed trial has no equity curve, a
    Mean-CVaR trial has no training curve, an empty journal has no runs to rank."""

    exit_code = EXIT_USAGE
    http_status = USAGE_STATUS


class ReplayError(ChartError):
    """A series the journal does not store could not be recomputed faithfully (the data or a
    policy file changed or is gone)."""


class ChromiumNotFound(ChartError):
    """PNG export needs a Chromium (or Chrome) and none was found."""


class ChartExportError(ChartError):
    """Writing a chart file failed (a browser that would not render, a PNG that will not fit)."""


class InvalidChartExport(ChartExportError, ValueError):
    """A chart file name or PNG size that cannot be exported (a suffix other than .html and
    .png, a side outside the allowed pixels): refused before anything is drawn."""

    exit_code = EXIT_USAGE
    http_status = USAGE_STATUS


class OutputFolderMissing(AlphaloopError, ValueError):
    """A file to write (a chart, an export) named in a folder that does not exist: most likely
    a typo, so it is refused rather than folders created that nobody asked for."""

    exit_code = EXIT_USAGE
    http_status = USAGE_STATUS

    def __init__(self, path: Path) -> None:
        super().__init__(
            f"cannot write {path}: the folder {path.parent} does not exist; "
            "create it first or choose another --out"
        )

    @classmethod
    def check(cls, path: Path) -> None:
        """Raises when ``path``'s folder does not exist."""
        if not path.parent.is_dir():
            raise cls(path)


class PolicyNotFound(JournalError, LookupError):
    """No library entry with the given id; the message lists recent policy ids."""

    exit_code = EXIT_USAGE
    http_status = 404


class PolicyTampered(AlphaloopError):
    """A policy file's sha256 differs from the one the library journaled when it was published
    (or the file is gone). Refused before anything in it is unpickled: an SB3 zip carries
    pickled objects, and a file nobody vouches for must never be loaded."""

    http_status = 409


class ActivePolicyError(AlphaloopError):
    """The active-policy pointer file cannot be read (garbled, or naming no library entry)."""

    http_status = 409


class ReplayWindowError(AlphaloopError, ValueError):
    """A replay window the data cannot serve (outside its dates, too short, reversed)."""

    exit_code = EXIT_USAGE
    http_status = USAGE_STATUS


class FlywheelError(AlphaloopError):
    """Base class of the preference flywheel's errors (decisions' verdicts, pairs, DPO)."""


class DecisionNotFound(FlywheelError, LookupError):
    """No portfolio decision with the given id; the message lists the undecided ones."""

    exit_code = EXIT_USAGE
    http_status = 404


class InvalidVerdict(FlywheelError, ValueError):
    """A verdict that cannot be recorded: an unknown verdict, override weights that name an
    unknown symbol, are negative or sum above 1, or a decision that already has a verdict."""

    exit_code = EXIT_USAGE
    http_status = USAGE_STATUS


class ModelDirError(FlywheelError, ValueError):
    """A directory that does not hold a local causal language model (config.json, weights and
    a tokenizer), or an output directory that cannot be used."""

    exit_code = EXIT_USAGE
    http_status = USAGE_STATUS


class PromptTooLong(FlywheelError, ValueError):
    """Preference pairs that do not fit the model's ``max_length`` in tokens even with their
    older history cut: TRL would drop them (or cut their answers), so the run stops before
    training and names the lengths and the limit."""

    exit_code = EXIT_USAGE
    http_status = USAGE_STATUS


class TooFewHeldOut(FlywheelError, ValueError):
    """Fewer held-out pairs than the minimum a preference accuracy is reported on
    (``ALPHALOOP_DPO_MIN_HELDOUT``): on a handful of pairs the accuracy means nothing."""

    exit_code = EXIT_USAGE
    http_status = USAGE_STATUS


class PmError(AlphaloopError):
    """The portfolio manager cannot tick: no active policy, no prices for the day, a book
    that does not exist."""

    http_status = 409


class MissingReason(AlphaloopError, ValueError):
    """An action a person must justify (a halt, activating a policy over its gates) came
    without its reason."""

    exit_code = EXIT_USAGE
    http_status = USAGE_STATUS


class BadTickDate(PmError, ValueError):
    """A day the portfolio manager cannot decide: not a date, a weekend, a day the data shows
    as a holiday, or a day before the data has a close."""

    exit_code = EXIT_USAGE
    http_status = USAGE_STATUS


class BrokerError(PmError):
    """A broker could not be reached or refused to report the account (missing keys, 403)."""

    # Not the 409 of the book's state: the service the tick needs is unavailable.
    http_status = 503
