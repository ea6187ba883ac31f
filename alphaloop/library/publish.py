"""New library entries: the best trial of a finished session, or a manual ``train`` run.

An entry records everything needed to rebuild or re-check the strategy without the session:
its config and hash, seed, the data it was made on (fingerprint, symbols and how it was
loaded), the trial budget its evaluation used, the objective, its validation and test metrics,
whether the session's gates passed, and (PPO kinds) its file and sha256.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from alphaloop.exceptions import AlphaloopError
from alphaloop.journal import (
    Journal,
    PolicyKind,
    PolicyRecord,
    PolicySource,
    SessionRecord,
    TrialRecord,
)
from alphaloop.knobs import TrialConfig, config_hash
from alphaloop.library.files import copy_into_library

logger = logging.getLogger(__name__)

KIND_OF_MODE: dict[str, PolicyKind] = {
    "ppo_only": PolicyKind.ppo,
    "cufolio_only": PolicyKind.mean_cvar,
    "unified": PolicyKind.unified,
}


def publish_trial(
    journal: Journal,
    policies_dir: Path,
    *,
    session: SessionRecord,
    trial: TrialRecord,
    source: PolicySource | str,
    test_metrics: dict[str, Any] | None = None,
    gates_passed: bool | None = None,
) -> PolicyRecord:
    """Adds ``trial`` of ``session`` to the library and returns its entry; a trial already in
    the library returns its entry unchanged (a finalize interrupted after publishing runs again).

    Raises:
        ValueError: a mode with no library kind.
        AlphaloopError: a PPO trial with no saved policy file.
    """
    existing = journal.policies.of_trial(trial.id)
    if existing is not None:
        return existing
    if session.mode not in KIND_OF_MODE:
        raise ValueError(f"session {session.id} has mode {session.mode!r}: no library kind")
    kind = KIND_OF_MODE[session.mode]
    path = sha = None
    if kind != PolicyKind.mean_cvar:
        if not trial.policy_path or not Path(trial.policy_path).is_file():
            raise AlphaloopError(
                f"trial #{trial.idx} of session {session.id} has no saved policy at "
                f"{trial.policy_path!r}; it cannot enter the library"
            )
        file, sha = copy_into_library(trial.policy_path, policies_dir)
        path = str(file)
    spec = session.spec
    if spec is None:
        raise AlphaloopError(f"session {session.id} holds no spec: its data cannot be recorded")
    described = session.settings.data
    symbols = described.symbols if described else spec.symbols or []
    record = journal.policies.add(
        kind=kind,
        source=PolicySource(source),
        session_id=session.id,
        trial_id=trial.id,
        mode=session.mode,
        config=trial.config,
        config_hash=trial.config_hash or config_hash(TrialConfig(**trial.config)),
        seed=trial.seed if trial.seed is not None else session.seed,
        data_fingerprint=session.data_fingerprint,
        symbols=list(symbols),
        data_spec=spec.data_spec,
        trial_budget=spec.trial_budget,
        objective=session.objective,
        val_objective=trial.score,
        val_metrics=trial.metrics,
        test_metrics=test_metrics,
        gates_passed=gates_passed,
        path=path,
        sha256=sha,
    )
    logger.info("library: policy %d from trial #%d of %s", record.id, trial.idx, session.id)
    return record


def try_publish(
    journal: Journal, policies_dir: Path, **kwargs: Any
) -> tuple[PolicyRecord | None, str | None]:
    """:func:`publish_trial`, with a failure turned into a note (the entry, or None and why):
    a session or run that finished keeps its result even when its policy cannot be published."""
    try:
        return publish_trial(journal, policies_dir, **kwargs), None
    except (AlphaloopError, OSError, ValueError) as err:
        logger.warning("library: not published: %s", err)
        return None, f"not added to the policy library: {err}"
