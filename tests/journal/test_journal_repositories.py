"""The journal reads like its tables: :class:`Journal` is the open file and one repository per
group of tables, each defined in the module of its name; no mixin adds methods to it."""

from __future__ import annotations

import importlib
import pkgutil
from functools import cached_property

import alphaloop.journal
from alphaloop.journal import Journal
from alphaloop.journal.connection import JournalFile

REPOSITORIES = {
    "sessions",
    "trials",
    "folds",
    "logs",
    "notes",
    "policies",
    "books",
    "preferences",
    "schedule",
    "jobs",
    "walks",
}
# What the open file itself offers: closing it (``with`` uses the dunders), where it lives, how
# a path is journaled relative to it, and its sqlite-utils view that repositories write rows with.
LIFECYCLE = {"close", "home", "stored_path", "db"}


def test_the_journal_offers_its_lifecycle_and_its_repositories_only() -> None:
    public = {name for name in dir(Journal) if not name.startswith("_")}
    assert public == LIFECYCLE | REPOSITORIES


def test_each_repository_lives_in_the_module_of_its_name(journal: Journal) -> None:
    for name in sorted(REPOSITORIES):
        assert isinstance(vars(Journal)[name], cached_property), name
        repository = getattr(journal, name)
        assert type(repository).__module__ == f"alphaloop.journal.{name}", name
        assert getattr(journal, name) is repository  # one per open journal
        assert not isinstance(repository, JournalFile), name  # it holds the file, is not one
        assert repository._journal is journal


def test_nothing_but_the_journal_extends_the_file() -> None:
    for module in pkgutil.iter_modules(alphaloop.journal.__path__):
        importlib.import_module(f"alphaloop.journal.{module.name}")
    assert JournalFile.__subclasses__() == [Journal]
