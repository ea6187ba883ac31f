"""A Python client generated from the API's OpenAPI document (openapi-python-generator, as a
client of the API would) runs a research session, a validation and a portfolio-manager tick
against a live server, following each job to its end: what the document says is enough to use
the API."""

from __future__ import annotations

import importlib
import json
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from alphaloop.journal import Journal
from alphaloop.settings import Settings

from .helpers import live_server

pytestmark = pytest.mark.slow
CLIENT = "alphaloop_client"


def generate(base: str, into: Path) -> Any:
    """The client generated from the server's document, imported."""
    from openapi_python_generator.generate_data import generate_data

    document = into / "openapi.json"
    document.write_text(json.dumps(httpx.get(f"{base}/openapi.json").json()))
    DOCUMENT.update(json.loads(document.read_text()))
    generate_data(document, into / CLIENT)
    sys.path.insert(0, str(into))
    try:
        return {
            name: importlib.import_module(f"{CLIENT}.{name}")
            for name in ("api_config", "models", "services.research_service")
        } | {
            name: importlib.import_module(f"{CLIENT}.services.{name}_service")
            for name in ("jobs", "sessions", "policies", "portfolio_manager")
        }
    finally:
        sys.path.remove(str(into))


DOCUMENT: dict[str, Any] = {}


def body(models: Any, name: str, **values: Any) -> Any:
    """A request body with every field the caller leaves out at the document's default: the
    generated models leave them None, which the schema does not allow (the generator sends
    every field)."""
    fields = DOCUMENT["components"]["schemas"][name]["properties"]
    defaults = {k: f["default"] for k, f in fields.items() if "default" in f}
    return getattr(models, name)(**{**defaults, **values})


def finished(client: dict[str, Any], config: Any, job_id: int, timeout_s: float = 600) -> Any:
    """The job, read through the client until it has ended."""
    deadline = time.monotonic() + timeout_s
    while True:
        job = client["jobs"].job_show_api_jobs__job_id__get(config, job_id=job_id)
        if job.status.value not in ("queued", "running"):
            return job
        assert time.monotonic() < deadline, f"job {job_id} still {job.status}"
        time.sleep(0.5)


def test_a_generated_client_runs_a_session_a_validation_and_a_tick(
    settings: Settings, tmp_path: Path
) -> None:
    with live_server(settings) as base:
        client = generate(base, tmp_path)
        models, config = client["models"], client["api_config"].APIConfig(base_path=base)
        research = client["services.research_service"]

        started = research.research_start_api_research_post(
            config,
            # The generator sends an optional header even when None: give it one.
            Idempotency_Key="generated-client-1",
            data=body(
                models,
                "ResearchRequest",
                goal="maximise Sharpe",
                data="synthetic",
                budget=2,
                noise_seeds=2,
                folds=1,
            ),
        )
        session = finished(client, config, started.job_id)
        assert session.status.value == "finished", session.error
        sid = session.result.session_id

        validating = client["sessions"].session_validate_api_sessions__session_id__validate_post(
            config, session_id=sid, data=body(models, "ValidateRequest", blocks=4, windows=1)
        )
        validation = finished(client, config, validating.job_id)
        assert validation.status.value == "finished", validation.error
        assert validation.result.session_id == sid and validation.result.headline

        policies = client["policies"].policy_list_api_policies_get(config)
        (policy,) = [p for p in policies.items if p["session_id"] == sid]
        client["policies"].policy_activate_api_policies__policy_id__activate_post(
            config, policy_id=policy["id"], force=True, reason="a client's test"
        )
        ticking = client["portfolio_manager"].tick_api_pm_tick_post(
            config, data=body(models, "TickRequest", book="main")
        )
        tick = finished(client, config, ticking.job_id)
        assert tick.status.value == "finished", tick.error

    with Journal(settings.journal_path) as j:  # what the client saw is what was journaled
        assert j.sessions.get(sid).status == "finished"
        (decision,) = j.books.list_decisions("main")
        assert decision.id == tick.result.decision_id and decision.policy_id == policy["id"]
        assert [job.kind for job in j.jobs.list()] == ["research", "validate", "pm_tick"]
