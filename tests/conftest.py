"""Shared pytest fixtures."""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from filelock import FileLock

from alphaloop.settings import Settings, get_settings

try:  # ``python -m pytest`` (or a tests/__init__.py) makes ``tests`` a package...
    from tests.fake_openai import FakeOpenAI
except ImportError:  # ...plain ``pytest`` only puts tests/ itself on sys.path
    from fake_openai import FakeOpenAI  # type: ignore[no-redef]


# Running on several cores: which tests share a worker (see tests/parallel.py).
pytest_plugins = ("tests.parallel",)

# httpx's one-call helpers wait 5 s for an answer. The suite runs on every core beside tests
# that train and solve, and a fresh app's first answer imports what it serves: on a busy
# 2-core machine that took longer. A test waits a minute; one about a deadline sets its own.
HTTP_TIMEOUT_S = 60.0
for _verb in ("request", "get", "post", "put", "patch", "delete", "head", "options", "stream"):
    setattr(httpx, _verb, functools.partial(getattr(httpx, _verb), timeout=HTTP_TIMEOUT_S))


@pytest.fixture(scope="session", autouse=True)
def _default_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """A test that names no home still writes into a temporary one, never into the working
    directory's ``.alphaloop`` (or the machine's own ``ALPHALOOP_HOME``)."""
    yield from _env_var("ALPHALOOP_HOME", str(tmp_path_factory.mktemp("default-home")))


@pytest.fixture(scope="session", autouse=True)
def _sb3_log_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """SB3's own ``PPO`` (the tests' reference) makes an ``SB3-<timestamp>`` folder in the
    system temp folder on every ``learn`` unless ``SB3_LOGDIR`` names one: the suite's go into
    its own temporary folder."""
    yield from _env_var("SB3_LOGDIR", str(tmp_path_factory.mktemp("sb3-logs")))


def _env_var(name: str, value: str) -> Iterator[None]:
    """Sets the environment variable ``name`` for a session fixture's life, then restores it."""
    saved = os.environ.get(name)
    os.environ[name] = value
    yield
    if saved is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = saved


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """Removes every environment variable the settings read, so the machine's own configuration
    cannot leak into a test; returns ``monkeypatch`` to set the ones a test wants."""
    for info in Settings.model_fields.values():
        for alias in getattr(info.validation_alias, "choices", ()):
            monkeypatch.delenv(str(alias), raising=False)
    return monkeypatch


@pytest.fixture
def settings(tmp_path: Path, clean_env: pytest.MonkeyPatch) -> Settings:
    """A fresh alphaloop home in ``tmp_path``, set through ``ALPHALOOP_HOME`` so that the CLI run
    in-process reads the same settings as the test. Modules needing another home override it."""
    clean_env.setenv("ALPHALOOP_HOME", str(tmp_path / "home"))
    return get_settings()


# A short session that finishes with its TEST evaluation: a Mean-CVaR random search.
FINISHED_SESSION = ["research", "maximise Sharpe", "--mode", "cufolio_only", "--data", "synthetic",
                    "--noise-seeds", "2", "--proposer", "random", "--seed", "5", "--budget", "4",
                    "--json"]  # fmt: skip


def run_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The temporary folder of the whole run: every worker's own under ``-n`` share it."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session")
def finished_session(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """(home, session id) of :data:`FINISHED_SESSION`, run once for the whole test run (by
    the first worker to ask, under a file lock; the others read its id) in a home of its own:
    for tests that read a finished session and write nothing into its journal."""
    from typer.testing import CliRunner

    from alphaloop.cli import app

    root = run_root(tmp_path_factory) / "finished-session"
    root.mkdir(exist_ok=True)
    home, made = root / "home", root / "session-id"
    with FileLock(root / "lock"):
        if not made.exists():
            result = CliRunner().invoke(app, FINISHED_SESSION, env={"ALPHALOOP_HOME": str(home)})
            assert result.exit_code == 0, result.output
            made.write_text(json.loads(result.stdout)["session"]["id"])
    return home, made.read_text()


@pytest.fixture
def in_finished_session(finished_session: tuple[Path, str], clean_env: pytest.MonkeyPatch) -> str:
    """The id of :data:`FINISHED_SESSION`, its home set as ``ALPHALOOP_HOME`` for the test."""
    home, session_id = finished_session
    clean_env.setenv("ALPHALOOP_HOME", str(home))
    return session_id


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    """A running scripted OpenAI-compatible server (see ``tests/fake_openai.py``)."""
    with FakeOpenAI() as server:
        yield server


@pytest.fixture
def llm_settings(
    fake_openai: FakeOpenAI, tmp_path: Path, clean_env: pytest.MonkeyPatch
) -> Callable[..., Settings]:
    """Builds :class:`Settings` pointing at ``fake_openai``, with fast retries.

    Keyword arguments are field names overriding the defaults below, e.g.
    ``llm_settings(llm_max_retries=0)``. Every environment variable the settings read is
    removed first, so the machine's own configuration cannot leak into a test.
    """

    def build(**overrides: Any) -> Settings:
        fields: dict[str, Any] = {
            "home": tmp_path / "home",
            "llm_base_url": fake_openai.base_url,
            "llm_model": fake_openai.models[0],
            "llm_timeout_s": 5.0,
            "llm_max_retries": 2,
            "llm_backoff_base_s": 0.01,
            "llm_backoff_max_s": 0.05,
            **overrides,
        }
        # Settings validates by environment-variable alias, so pass each field under its first.
        by_alias = {
            str(Settings.model_fields[name].validation_alias.choices[0]): value
            for name, value in fields.items()
        }
        return Settings(**by_alias)

    return build
