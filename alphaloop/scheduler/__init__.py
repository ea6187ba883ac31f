"""The scheduler: APScheduler 3 driving the operations layer on a clock.

One scheduler per alphaloop home (an exclusive lock file); its jobs (``alphaloop.ops.schedule``)
are stored in an SQLite job store beside the journal and rebuilt from the cron settings at
every start, and every run is journaled in ``schedule_runs``.
"""

from alphaloop.scheduler.runner import build_scheduler, run_scheduler, scheduled_run

__all__ = ["build_scheduler", "run_scheduler", "scheduled_run"]
