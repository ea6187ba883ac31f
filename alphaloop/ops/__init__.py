"""The operations layer: every user-level action and read, defined once, one module a noun.

The command line, the REST server and the chat model's tools call these functions and nothing
below them. Arrows point one way: front ends -> ``ops`` -> ``meta_agent``, ``trials``,
``journal``, ``charts`` -> engines -> ``knobs``, ``market``, ``metrics``.

A front end imports the module it needs, never a name re-exported here: this package exports
its modules, each imported on first use (PEP 562), so ``from alphaloop import ops`` costs
nothing, ``ops.sessions.list_sessions(...)`` loads the journal's reads and no more, and
``alphaloop --help`` loads none of them. Inputs and outputs are frozen models.

Modules: ``requests`` (every request a front end accepts, declared once), ``sessions`` (list,
status, review), ``goal`` (what a research goal sets), ``research`` (start, run, resume, stop),
``trial`` (one trial by hand), ``train`` (manual PPO training), ``validate`` (the validation
suite), ``dashboard``, ``plots``, ``rows`` and ``notes`` (the web page's reads), ``objective``
(a session's objective as the front ends name it), ``charts``, ``series`` (the series a chart
needs, recomputed), ``replay`` (a trial or policy re-run on a window of one's own),
``frontier``, ``knobs``, ``env``, ``records`` (the journal's records a front end shows),
``policies``, ``pm``, ``prefs``, ``dpo``, ``schedule``, ``jobs`` and ``job_runners`` (long work
handed to a worker), ``export``, ``tearsheet``, ``walk`` (the loop replayed over history),
``walk_jobs`` (a walk as a job) and ``walk_sheet`` (a walk's tear sheet).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from alphaloop._lazy import lazy_attributes

if TYPE_CHECKING:
    from alphaloop.ops import (
        charts,
        dashboard,
        dpo,
        env,
        export,
        frontier,
        goal,
        job_runners,
        jobs,
        knobs,
        notes,
        objective,
        plots,
        pm,
        policies,
        prefs,
        records,
        replay,
        requests,
        research,
        rows,
        schedule,
        series,
        sessions,
        tearsheet,
        train,
        trial,
        validate,
        walk,
        walk_jobs,
        walk_sheet,
    )

__all__ = [
    "charts",
    "dashboard",
    "dpo",
    "env",
    "export",
    "frontier",
    "goal",
    "job_runners",
    "jobs",
    "knobs",
    "notes",
    "objective",
    "plots",
    "pm",
    "policies",
    "prefs",
    "records",
    "replay",
    "requests",
    "research",
    "rows",
    "schedule",
    "series",
    "sessions",
    "tearsheet",
    "train",
    "trial",
    "validate",
    "walk",
    "walk_jobs",
    "walk_sheet",
]

__getattr__, __dir__ = lazy_attributes(
    __name__, {name: f"{__name__}.{name}" for name in __all__}, __all__
)
