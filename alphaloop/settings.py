"""Configuration read from the environment, in exactly this one module.

Every other module receives a :class:`Settings` (or the values it needs) as an argument; nothing
else reads ``os.environ``. The one place that writes it is :meth:`Settings.confine_scratch`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import AliasChoices, Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


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
        default=120.0, gt=0, validation_alias=AliasChoices("ALPHALOOP_LLM_TIMEOUT")
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
    llm_reasoning: bool = Field(
        default=False,
        validation_alias=AliasChoices("ALPHALOOP_LLM_REASONING"),
        description="Nemotron reasoning mode: 'detailed thinking on' in the system prompt",
    )

    @field_validator("chromium", mode="before")
    @classmethod
    def _blank_is_unset(cls, value: Any) -> Any:
        # ``ALPHALOOP_CHROMIUM=`` unsets it; as a path it would mean the current directory.
        return None if isinstance(value, str) and not value.strip() else value

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
