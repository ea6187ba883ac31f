"""What people and the chat write beside sessions: notes on sessions and trials (the current
text with its version, every earlier version, and an edit that is refused when it was made on
an older version: 409), and the chat's own LLM calls."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from alphaloop.journal.notes import NoteVersion
from alphaloop.ops._journal import open_journal
from alphaloop.settings import Settings

MAX_NOTE_CHARS = 20_000


class Note(BaseModel):
    """A note as it reads now: ``version`` 0 and empty text when none was written."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    session_id: str
    trial_id: int | None
    version: int
    text: str
    history: list[NoteVersion]


def _note(session_id: str, trial_id: int | None, versions: list[NoteVersion]) -> Note:
    last = versions[-1] if versions else None
    return Note(
        session_id=session_id,
        trial_id=trial_id,
        version=last.version if last else 0,
        text=last.text if last else "",
        history=versions,
    )


def read_note(settings: Settings, session_id: str, trial_id: int | None = None) -> Note:
    """The note on a session (or one of its trials).

    Raises:
        NoJournal, NotFound: no such session.
    """
    with open_journal(settings) as j:
        j.sessions.get(session_id)
        return _note(session_id, trial_id, j.notes.versions(session_id, trial_id))


def save_note(
    settings: Settings, session_id: str, trial_id: int | None, text: str, base_version: int
) -> Note:
    """Writes the next version of a note, made on ``base_version``.

    Raises:
        NoJournal, NotFound, NotFound: nothing to note.
        Conflict: the note was edited since ``base_version`` (409).
    """
    with open_journal(settings) as j:
        j.notes.save(session_id, trial_id, text, base_version)
        return _note(session_id, trial_id, j.notes.versions(session_id, trial_id))


__all__ = ["MAX_NOTE_CHARS", "Note", "read_note", "save_note"]


def log_llm_call(settings: Settings, **record: object) -> None:
    """Journals one LLM call made outside a session's loop (the chat agent's)."""
    from alphaloop.journal import Journal

    with Journal(settings.journal_path) as journal:
        journal.logs.add_llm_call(**record)
