"""The error table: every error alphaloop raises on purpose, with the answer each front end gives.

A class exists when a caller handles it differently, and each carries ``exit_code`` for the
command line (1: the work failed, 2: bad usage) and ``http_status`` for the REST API (404 no such
thing, 409 the current state forbids it, 422 bad input, 500 a failure, 503 a service it needs is
unavailable: try later). The CLI, the server and the chat tools all ask :func:`exit_code_of` and
:func:`http_status_of`; none keeps a map of its own. The message says what was wrong and what to
do; the API answers it with the class's name as its ``error``.

The classes (exit code, HTTP status: when; who handles it apart from the table):

- ``AlphaloopError`` (1, 500): the work failed (a journal that is not ours, a replay that no
  longer matches the journal, a chart that could not be written, a run that stopped).
- ``InvalidRequest`` (2, 422): input that cannot be used (price data, a window or a date the
  data cannot serve, a value out of range, a chart that does not apply, a missing folder).
- ``NotFound`` (2, 404): no session, trial, job, policy or decision with that id;
  ``NoJournal`` (2, 404), no journal yet in the home, which front ends word for their users.
- ``Conflict`` (2, 409): the current state forbids it (a session another process runs, a book
  with no active policy, a second scheduler).
- ``Unavailable`` (1, 503): a service the work needs does not answer (the journal's lock, a
  broker, a Ray cluster); a client may try later.
- ``InvalidDelta`` (2, 422): a proposed edit names an unknown knob or is not a number; the loop
  journals an invalid trial.
- ``TrialCrashed``, ``TrialTimeout`` (1, 500): a trial could not finish, or ran past its time
  limit; the loop journals a crash or a timeout.
- ``SolverError`` (1, 500): a solver returned no usable solution.
- ``LLMError`` (1, 500): a call to the LLM endpoint failed, and the proposer falls back to TPE;
  ``LLMUnavailable`` (1, 503) when it timed out or was refused through every retry;
  ``Unsupported`` (1, 500) when the endpoint refuses a capability (tools, ``response_format``,
  images), and the caller asks another way.
- ``ReplyParseError`` (1, 500): a model's reply holds no usable JSON; the proposer asks again.
- ``PolicyTampered``, ``ActivePolicyError`` (1, 409): a policy file's hash differs from the
  library's (``policies verify`` reports it), or the active-policy pointer cannot be read
  (activation replaces it).

Errors that are not alphaloop's are bugs (exit 1, HTTP 500), with one exception decided here:
a ``ValueError`` (pydantic's ``ValidationError`` is one) is how input validation names a bad
value, so a front end that catches one answers bad usage (exit 2, HTTP 422).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import ClassVar, Literal

EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_CODES = frozenset({EXIT_FAILURE, EXIT_USAGE})
USAGE_STATUS = 422
FAILURE_STATUS = 500
HTTP_STATUSES = frozenset({404, 409, USAGE_STATUS, FAILURE_STATUS, 503})


class AlphaloopError(Exception):
    """Base class of alphaloop's own errors: the work failed (exit 1, HTTP 500) unless a
    subclass says otherwise."""

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


# An absolute file path in a message (the journal, a policy file, a model folder), not an API
# path (/api/...) nor a ratio (1/N).
_FILE_PATH = re.compile(r"(?<![\w:/.])/(?!api/|static/)(?:[\w.\-@+~]+/)+([\w.\-@+~]*)")


def without_paths(message: str) -> str:
    """``message`` as it may leave this machine (an API body, a chat tool's result sent to the
    LLM endpoint): every absolute file path cut to its last part, so no message tells a remote
    reader where the home or the user's files are."""
    return _FILE_PATH.sub(lambda m: m.group(1) or "<folder>", message)


class DataWarning(UserWarning):
    """Something about the data was changed on load (rows sorted, prices filled); the message
    says what. A warning, not an error: the command goes on, and front ends show it."""


class InvalidRequest(AlphaloopError, ValueError):
    """Input that cannot be used as given, refused before anything is written: the message names
    the value and what to give instead (price data, a window or a date the data cannot serve, a
    chart that does not apply to what was asked, a model directory, a verdict, a folder that
    does not exist...)."""

    exit_code = EXIT_USAGE
    http_status = USAGE_STATUS


def check_folder(path: Path) -> None:
    """Refuses a file to write (a chart, an export) named in a folder that does not exist: most
    likely a typo, so nothing creates folders nobody asked for.

    Raises:
        InvalidRequest: ``path``'s folder does not exist.
    """
    if not path.parent.is_dir():
        raise InvalidRequest(
            f"cannot write {path}: the folder {path.parent} does not exist; "
            "create it first or choose another --out"
        )


class NotFound(AlphaloopError, LookupError):
    """No session, trial, job, library policy or decision with the given id; the message lists
    the ids there are."""

    exit_code = EXIT_USAGE
    http_status = 404


class NoJournal(NotFound):
    """No journal exists yet in the alphaloop home: no session or run has been started there.

    Front ends word it for their users (``path`` says where it was looked for).
    """

    def __init__(self, path: Path) -> None:
        super().__init__(f"no journal yet at {path}: no research session has been run in this home")
        self.path = path


class Conflict(AlphaloopError):
    """What was asked clashes with the state things are in: resuming a session another process
    runs, stopping one nothing runs, a second scheduler, ticking a book with no active policy."""

    exit_code = EXIT_USAGE
    http_status = 409


class Unavailable(AlphaloopError):
    """A service the work needs does not answer (the journal's lock held past the busy timeout,
    a broker, a Ray cluster): not this process broken, so a client may try later."""

    http_status = 503


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


class SolverError(AlphaloopError, RuntimeError):
    """A solver ran but returned no usable solution."""


class TrialCrashed(AlphaloopError, RuntimeError):
    """A trial could not finish (diverged policy, solver failure...); the journal marks it crash."""


class TrialTimeout(AlphaloopError, RuntimeError):
    """A trial ran past its time limit; the journal marks it timeout."""


class LLMError(AlphaloopError):
    """A call to the LLM endpoint failed; the message says why and what to check (the key, the
    model, the base URL, a request the endpoint refuses, a body that is not a chat completion).

    Attributes:
        status_code: the HTTP status of the last attempt, if the server answered.
        attempts: how many attempts were made before giving up.
    """

    def __init__(self, message: str, *, status_code: int | None = None, attempts: int = 1) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.attempts = attempts


class LLMUnavailable(LLMError):
    """Timeouts, refused connections, 429 or 5xx persisted through every retry."""

    # The endpoint is down or overloaded, not this server broken: a client may try later.
    http_status = 503


Capability = Literal["tools", "response_format", "images"]


class Unsupported(LLMError):
    """The endpoint or its model refuses a capability: tool calling (the proposer asks for JSON
    in the message text), ``response_format`` json_schema (it asks for plain JSON), or image
    input (chart reads use the embedded reader). Retrying cannot help.

    Attributes:
        capability: ``tools``, ``response_format`` or ``images``.
    """

    def __init__(
        self,
        message: str,
        *,
        capability: Capability,
        status_code: int | None = None,
        attempts: int = 1,
    ) -> None:
        super().__init__(message, status_code=status_code, attempts=attempts)
        self.capability = capability


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


class PolicyTampered(AlphaloopError):
    """A policy file's sha256 differs from the one the library journaled when it was published
    (or the file is gone). Refused before anything in it is unpickled: an SB3 zip carries
    pickled objects, and a file nobody vouches for must never be loaded."""

    http_status = 409


class ActivePolicyError(AlphaloopError):
    """The active-policy pointer file cannot be read (garbled, or naming no library entry)."""

    http_status = 409
