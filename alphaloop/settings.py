"""Configuration read from the environment, in exactly this one module.

Every other module receives a :class:`Settings` (or the values it needs) as an argument; nothing
else reads ``os.environ``. The one place that writes it is :meth:`Settings.confine_scratch`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import AliasChoices, Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

# The book the portfolio manager trades unless told another: a default of every front end.
MAIN_BOOK = "main"


class Settings(BaseSettings):
    """alphaloop's settings. Environment variables are named in each field's alias."""

    model_config = SettingsConfigDict(frozen=True, extra="ignore")

    home: Path = Field(
        default=Path(".alphaloop"),
        validation_alias=AliasChoices("ALPHALOOP_HOME"),
        description="directory holding the journal, policies and charts",
    )
    llm_base_url: str | None = Field(
        default=None,
        validation_alias=AliasChoices("ALPHALOOP_LLM_BASE_URL", "OPENAI_BASE_URL"),
    )
    llm_model: str | None = Field(
        default=None, validation_alias=AliasChoices("ALPHALOOP_LLM_MODEL")
    )
    llm_api_key: str | None = Field(
        default=None,
        validation_alias=AliasChoices("ALPHALOOP_LLM_API_KEY", "OPENAI_API_KEY"),
    )
    vlm_model: str | None = Field(
        default=None, validation_alias=AliasChoices("ALPHALOOP_VLM_MODEL")
    )
    chromium: Path | None = Field(
        default=None,
        validation_alias=AliasChoices("ALPHALOOP_CHROMIUM", "BROWSER_PATH"),
        description="the Chromium (or Chrome) that renders PNG charts; default: found on PATH "
        "or at the usual install paths (BROWSER_PATH is kaleido's own name for it)",
    )
    llm_timeout_s: float = Field(
        default=120.0,
        gt=0,
        validation_alias=AliasChoices("ALPHALOOP_LLM_TIMEOUT"),
        description="seconds one request may take, its generation included; one that runs "
        "out while the server is generating is not sent again",
    )
    llm_max_retries: int = Field(
        default=4, ge=0, validation_alias=AliasChoices("ALPHALOOP_LLM_MAX_RETRIES")
    )
    llm_backoff_base_s: float = Field(
        default=1.0,
        gt=0,
        validation_alias=AliasChoices("ALPHALOOP_LLM_BACKOFF_BASE"),
        description="first retry delay in seconds; doubles on every further retry",
    )
    llm_backoff_max_s: float = Field(
        default=30.0,
        gt=0,
        validation_alias=AliasChoices("ALPHALOOP_LLM_BACKOFF_MAX"),
        description="cap on one retry delay, including a server's Retry-After",
    )
    llm_temperature: float = Field(
        default=0.6, ge=0, le=2, validation_alias=AliasChoices("ALPHALOOP_LLM_TEMPERATURE")
    )
    llm_max_tokens: int = Field(
        default=1024,
        ge=16,
        validation_alias=AliasChoices("ALPHALOOP_LLM_MAX_TOKENS"),
        description="cap on one proposal's reply; a small model that never stops is cut here "
        "instead of generating for minutes",
    )
    llm_chat_deadline_s: float = Field(
        default=120.0,
        gt=0,
        validation_alias=AliasChoices("ALPHALOOP_LLM_CHAT_DEADLINE"),
        description="seconds the model may take over one chat answer (every model call, retry "
        "and wait of it; the tools' own time not counted); past it the answer stops with a "
        "message saying what to change",
    )
    llm_chat_max_tokens: int = Field(
        default=2048,
        ge=16,
        validation_alias=AliasChoices("ALPHALOOP_LLM_CHAT_MAX_TOKENS"),
        description="cap on one chat reply (answers are longer than proposals)",
    )
    vlm_max_tokens: int = Field(
        default=600,
        ge=16,
        validation_alias=AliasChoices("ALPHALOOP_VLM_MAX_TOKENS"),
        description="cap on one chart reading by the vision model",
    )
    llm_text_fallback_after: int = Field(
        default=2,
        ge=1,
        validation_alias=AliasChoices("ALPHALOOP_LLM_TEXT_FALLBACK_AFTER"),
        description="forced tool calls answered in plain text, in a row, before the proposer "
        "asks for JSON in the message text instead",
    )
    llm_duplicate_retries: int = Field(
        default=2,
        ge=0,
        validation_alias=AliasChoices("ALPHALOOP_LLM_DUPLICATE_RETRIES"),
        description="times a proposal that clips to an already-run config is sent back before "
        "TPE fills the slot",
    )
    llm_reasoning: bool = Field(
        default=False,
        validation_alias=AliasChoices("ALPHALOOP_LLM_REASONING"),
        description="Nemotron reasoning mode: 'detailed thinking on' in the system prompt",
    )

    # --- research: the go/no-go gates --------------------------------------------------------
    gates: str = Field(
        default="",
        validation_alias=AliasChoices("ALPHALOOP_GATES"),
        description="go/no-go gate thresholds every new session is judged by, comma-separated "
        "NAME=VALUE or NAME=off, the names of --gate (min_sharpe=1.0,max_pbo=off); a session's "
        "own --gate wins",
    )

    # --- the continuous loop: policy library, portfolio manager, broker ------------------------
    auto_activate: bool = Field(
        default=False,
        validation_alias=AliasChoices("ALPHALOOP_AUTO_ACTIVATE"),
        description="activate a session's new best policy when it beats the active one on its "
        "validation objective by more than the noise floor",
    )
    broker: Literal["paper", "alpaca"] = Field(
        default="paper", validation_alias=AliasChoices("ALPHALOOP_BROKER")
    )
    pm_initial_cash: float = Field(
        default=100_000.0, gt=0, validation_alias=AliasChoices("ALPHALOOP_PM_INITIAL_CASH")
    )
    pm_max_turnover: float = Field(
        default=1.0,
        gt=0,
        validation_alias=AliasChoices("ALPHALOOP_PM_MAX_TURNOVER"),
        description="kill switch: the largest one-day turnover (sum of |weight change| / 2)",
    )
    pm_max_drawdown: float = Field(
        default=0.25,
        gt=0,
        le=1,
        validation_alias=AliasChoices("ALPHALOOP_PM_MAX_DRAWDOWN"),
        description="kill switch: halt when the book is this far below its peak equity",
    )
    pm_min_trade: float = Field(
        default=1.0,
        ge=0,
        validation_alias=AliasChoices("ALPHALOOP_PM_MIN_TRADE"),
        description="orders smaller than this notional (in cash units) are not sent",
    )
    alpaca_api_key: str | None = Field(
        default=None, validation_alias=AliasChoices("ALPHALOOP_ALPACA_API_KEY", "APCA_API_KEY_ID")
    )
    alpaca_secret_key: str | None = Field(
        default=None,
        validation_alias=AliasChoices("ALPHALOOP_ALPACA_SECRET_KEY", "APCA_API_SECRET_KEY"),
    )
    alpaca_base_url: str | None = Field(
        default=None,
        validation_alias=AliasChoices("ALPHALOOP_ALPACA_BASE_URL", "APCA_API_BASE_URL"),
        description="override of Alpaca's trading API address; default: its paper endpoint",
    )

    # --- the preference flywheel -----------------------------------------------------------------
    pref_min_gap: float = Field(
        default=0.001,
        ge=0,
        validation_alias=AliasChoices("ALPHALOOP_PREF_MIN_GAP"),
        description="T+5 outcome gap below which a decision's pair stays unlabelled",
    )
    dpo_min_pairs: int = Field(
        default=32,
        ge=1,
        validation_alias=AliasChoices("ALPHALOOP_DPO_MIN_PAIRS"),
        description="dpo check trains only when this many new labelled pairs exist",
    )
    dpo_max_length: int | None = Field(
        default=None,
        ge=16,
        validation_alias=AliasChoices("ALPHALOOP_DPO_MAX_LENGTH"),
        description="longest training sequence (prompt and answer) in the model's tokens; "
        "default: the model's own context length (max_position_embeddings in its config)",
    )
    dpo_min_heldout: int = Field(
        default=20,
        ge=1,
        validation_alias=AliasChoices("ALPHALOOP_DPO_MIN_HELDOUT"),
        description="fewest held-out pairs a DPO run reports its preference accuracy on; a run "
        "with fewer is refused before training",
    )
    dpo_model: Path | None = Field(
        default=None,
        validation_alias=AliasChoices("ALPHALOOP_DPO_MODEL"),
        description="local model directory the scheduled DPO check trains",
    )

    # --- server, scheduler, traces -----------------------------------------------------------
    api_token: str | None = Field(
        default=None,
        validation_alias=AliasChoices("ALPHALOOP_API_TOKEN"),
        description="bearer token of the REST API; required to bind anything but loopback",
    )
    allowed_hosts: str | None = Field(
        default=None,
        validation_alias=AliasChoices("ALPHALOOP_ALLOWED_HOSTS"),
        description="comma-separated host names the server answers besides loopback and the "
        "address it binds (e.g. a LAN name); any other Host header gets a 403, which stops DNS "
        "rebinding",
    )
    max_jobs: int = Field(
        default=4,
        ge=0,
        le=64,
        validation_alias=AliasChoices("ALPHALOOP_MAX_JOBS"),
        description="worker processes the server's jobs run in at once; a job started beyond "
        "them is refused (409) before anything is journaled (0: the server starts none)",
    )
    cron_prefs_extract: str = Field(
        default="0 22 * * mon-fri", validation_alias=AliasChoices("ALPHALOOP_CRON_PREFS_EXTRACT")
    )
    cron_dpo_check: str = Field(
        default="30 22 * * *", validation_alias=AliasChoices("ALPHALOOP_CRON_DPO_CHECK")
    )
    cron_retrain: str = Field(
        default="0 3 * * sat", validation_alias=AliasChoices("ALPHALOOP_CRON_RETRAIN")
    )
    cron_pm_tick: str = Field(
        default="30 21 * * mon-fri",
        validation_alias=AliasChoices("ALPHALOOP_CRON_PM_TICK"),
        description="the daily tick, after the close (21:30 UTC: 16:30 or 17:30 in New York)",
    )
    pm_books: str = Field(
        default=MAIN_BOOK,
        validation_alias=AliasChoices("ALPHALOOP_PM_BOOKS"),
        description="comma-separated books the scheduler ticks each trading day",
    )
    pm_calendar: Literal["nyse", "weekdays"] = Field(
        default="nyse",
        validation_alias=AliasChoices("ALPHALOOP_PM_CALENDAR"),
        description="the trading days of the scheduled books: nyse (weekdays less the "
        "exchange's holidays) or weekdays",
    )
    otel: Literal["off", "file", "console"] = Field(
        default="off",
        validation_alias=AliasChoices("ALPHALOOP_OTEL"),
        description="OpenTelemetry spans: off, JSON lines under the home, or printed to stderr",
    )
    otlp_endpoint: str | None = Field(
        default=None,
        validation_alias=AliasChoices("OTEL_EXPORTER_OTLP_ENDPOINT"),
        description="send spans to this OTLP endpoint too (needs the OTLP exporter installed)",
    )

    # --- Ray clusters ------------------------------------------------------------------------
    ray_address: str | None = Field(
        default=None,
        validation_alias=AliasChoices("RAY_ADDRESS"),
        description="the Ray cluster a new session runs its trials on when it names none (Ray's "
        "own variable, read as `ray` commands read it); unset or `local`: this machine",
    )
    ray_connect_timeout_s: float = Field(
        default=30.0,
        gt=0,
        le=3600,
        validation_alias=AliasChoices("ALPHALOOP_RAY_CONNECT_TIMEOUT"),
        description="seconds a Ray cluster has to answer before a session fails, journaling "
        "nothing",
    )
    ray_task_retries: int = Field(
        default=3,
        ge=0,
        le=100,
        validation_alias=AliasChoices("ALPHALOOP_RAY_TASK_RETRIES"),
        description="times one trial's task lost with a Ray worker or node runs again; one more "
        "loss stops the session (resumable elsewhere)",
    )

    @field_validator(
        "chromium",
        "dpo_model",
        "dpo_max_length",
        "alpaca_api_key",
        "alpaca_secret_key",
        "api_token",
        "ray_address",
        mode="before",
    )
    @classmethod
    def _blank_is_unset(cls, value: Any) -> Any:
        # ``ALPHALOOP_CHROMIUM=`` unsets it; as a path it would mean the current directory.
        return None if isinstance(value, str) and not value.strip() else value

    @property
    def extra_hosts(self) -> tuple[str, ...]:
        """The names of :attr:`allowed_hosts`, lower-cased, without blanks."""
        names = (self.allowed_hosts or "").split(",")
        return tuple(n.strip().lower() for n in names if n.strip())

    @property
    def scheduled_books(self) -> tuple[str, ...]:
        """The names of :attr:`pm_books`, without blanks."""
        return tuple(b.strip() for b in self.pm_books.split(",") if b.strip())

    @property
    def journal_path(self) -> Path:
        return self.home / "journal.db"

    @property
    def policies_dir(self) -> Path:
        return self.home / "policies"

    @property
    def charts_dir(self) -> Path:
        return self.home / "charts"

    @property
    def active_policy_path(self) -> Path:
        """The pointer file naming the active policy (written atomically by ``activate``)."""
        return self.home / "active_policy.json"

    @property
    def locks_dir(self) -> Path:
        """Lock files that serialise work across processes (one per portfolio-manager book)."""
        return self.home / "locks"

    @property
    def traces_path(self) -> Path:
        return self.home / "traces" / "spans.jsonl"

    @property
    def scratch_dir(self) -> Path:
        """Where libraries and child processes keep their temporary and cache files."""
        return self.home.absolute() / "scratch"

    @property
    def llm_configured(self) -> bool:
        return bool(self.llm_base_url and self.llm_model)

    def confine_scratch(self) -> None:
        """Points the scratch files of this process and its children into :attr:`scratch_dir`.

        Left alone, torch creates a ``torchinductor_<user>`` cache in the system temp folder
        when an optimizer is first built, and Chromium (PNG export) writes crash-report and
        dconf folders under ``~/.config`` and ``~/.cache``. Only environment variables are set,
        nothing is created: each library makes its folder the first time it needs it, so a
        command that does no such work leaves no trace. Call it before torch is imported.
        """
        scratch = self.scratch_dir
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(scratch / "torchinductor")
        os.environ["XDG_CACHE_HOME"] = str(scratch / "cache")
        os.environ["XDG_CONFIG_HOME"] = str(scratch / "config")


def get_settings() -> Settings:
    """Reads the settings from the environment now (tests monkeypatch env vars, then call this)."""
    return Settings()
