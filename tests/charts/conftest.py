"""A journal with real runs (a research session on a planted market, a manual run on
synthetic data), built once for the chart tests.

``lab`` holds a Mean-CVaR research session whose proposals come from the scripted
OpenAI-compatible server (one kept trial, one invalid reply, two discarded), finalized on the
test window, and a manual PPO run whose curve is journaled with a 10-point cap.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from alphaloop.journal import Journal
from alphaloop.meta_agent.manual import ManualRun, ManualRunSpec, train_manual
from alphaloop.meta_agent.proposers.llm import PROPOSE_TOOL
from alphaloop.meta_agent.session import SessionSpec, create_session, run_session
from alphaloop.settings import Settings
from alphaloop.spec import Objective
from alphaloop.trials import TrialBudget

try:  # see tests/conftest.py: ``tests`` is a package only under ``python -m pytest``
    from tests import fake_openai as fake
except ImportError:
    import fake_openai as fake  # type: ignore[no-redef]

VLM_MODEL = "fake-vlm"
CURVE_CAP = 10
# Tiny PPO: 64 steps x 1 env per update, 24 updates.
MANUAL_KNOBS = {"n_steps": 64, "batch_size": 64, "n_epochs": 3}
MANUAL_BUDGET = TrialBudget(total_timesteps=64 * 24, n_envs=1)


@dataclass
class Lab:
    settings: Settings
    research_id: str
    manual: ManualRun
    updates: list[tuple[int, float]] = field(default_factory=list)

    def journal(self) -> Journal:
        return Journal(self.settings.journal_path)


def _clean_settings(home: Path, **extra: str) -> Settings:
    # By alias, with every other setting absent: the machine's environment must not leak in.
    values = {
        str(a): None for f in Settings.model_fields.values() for a in f.validation_alias.choices
    }
    values.update({"ALPHALOOP_HOME": str(home), **extra})
    return Settings(**{k: v for k, v in values.items() if v is not None})


def _delta(changes: dict, rationale: str) -> fake.Step:
    return fake.tool_call(PROPOSE_TOOL, json.dumps({"changes": changes, "rationale": rationale}))


@pytest.fixture(scope="session")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    home = tmp_path_factory.mktemp("lab") / "home"
    with fake.FakeOpenAI() as server:
        settings = _clean_settings(
            home,
            ALPHALOOP_LLM_BASE_URL=server.base_url,
            ALPHALOOP_LLM_MODEL=server.models[0],
            ALPHALOOP_LLM_MAX_RETRIES="0",
        )
        server.push(
            # From the default config: the short holds the planted market rewards beat it.
            _delta({"cufolio_hold_days": 5, "n_scenarios": 2000}, "a"),
            _delta({"cufolio_hold_days": "5%"}, "a percentage is not a number"),
            _delta({"cvar_alpha": 0.9, "cufolio_hold_days": 10}, "re-solve often"),
            _delta({"max_position_pct": 0.2}, "tighter caps"),
        )
        spec = SessionSpec(
            goal="maximise Sharpe on a planted market",
            mode="cufolio_only",
            budget=3,
            proposer="llm",
            objective=Objective(metric="sharpe"),
            data="planted:0",
            noise_seeds=3,
        )
        research_id = create_session(spec, settings)
        run_session(research_id, settings)
        assert server.pending == 0
    updates: list[tuple[int, float]] = []
    manual = train_manual(
        ManualRunSpec(data="synthetic", changes=MANUAL_KNOBS, trial_budget=MANUAL_BUDGET),
        _clean_settings(home),
        on_update=lambda t, r: updates.append((t, r)),
        max_curve_points=CURVE_CAP,
    )
    yield Lab(_clean_settings(home), research_id, manual, updates)


@pytest.fixture
def fake_openai() -> Iterator[fake.FakeOpenAI]:
    """The scripted server, also serving a vision model."""
    with fake.FakeOpenAI(models=("fake-model", VLM_MODEL)) as server:
        yield server
