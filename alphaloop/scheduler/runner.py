"""Building and running the APScheduler instance of an alphaloop home."""

from __future__ import annotations

import logging
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

from alphaloop.ops import schedule
from alphaloop.settings import Settings, get_settings

logger = logging.getLogger(__name__)

# A job missed while nothing ran (the machine was off) still runs if the scheduler comes back
# within this many seconds of its time; later than that, it waits for its next time.
MISFIRE_GRACE_S = 3600


def _job_store_url(settings: Settings) -> str:
    """The SQLite job store beside the journal."""
    return f"sqlite:///{(settings.home / 'scheduler.db').absolute()}"


def scheduled_run(job: str, home: str) -> None:
    """What the clock calls: one journaled run of ``job`` in the home at ``home``.

    Module-level and given plain values, so the SQLite job store can keep a reference to it.
    """
    settings = get_settings().model_copy(update={"home": Path(home)})
    run = schedule.run_job(settings, job, trigger="schedule")
    logger.info("job %s: %s", job, run.outcome)


def build_scheduler(settings: Settings, *, blocking: bool = True) -> Any:
    """An APScheduler scheduler with the jobs, their triggers checked first.

    The job definitions are rebuilt from the settings (``replace_existing``), so a changed cron
    setting takes effect at the next start; the store keeps their next run times between starts.

    Raises:
        InvalidRequest: a cron setting is not a valid expression.
    """
    from apscheduler.executors.pool import ThreadPoolExecutor
    from apscheduler.jobstores.sqlalchemy import SQLAlchemyJobStore
    from apscheduler.schedulers.background import BackgroundScheduler
    from apscheduler.schedulers.blocking import BlockingScheduler

    triggers = schedule.job_triggers(settings)
    settings.home.mkdir(parents=True, exist_ok=True)
    kind = BlockingScheduler if blocking else BackgroundScheduler
    scheduler = kind(
        jobstores={"default": SQLAlchemyJobStore(url=_job_store_url(settings))},
        # One worker per job: a long retrain never delays the nightly extract.
        executors={"default": ThreadPoolExecutor(len(schedule.JOBS))},
        job_defaults={"coalesce": True, "max_instances": 1, "misfire_grace_time": MISFIRE_GRACE_S},
        timezone="UTC",
    )
    for name, trigger in triggers.items():
        scheduler.add_job(
            scheduled_run,
            trigger,
            args=[name, str(settings.home.absolute())],
            id=name,
            name=name,
            replace_existing=True,
        )
    return scheduler


def run_scheduler(settings: Settings, on_start: Callable[[Any], None] | None = None) -> None:
    """Holds the home's scheduler lock and runs the jobs on their clock until SIGINT/SIGTERM.

    Raises:
        Conflict: another scheduler runs for this home.
        InvalidRequest: a cron setting is not a valid expression.
    """
    with schedule.scheduler_lock(settings):
        scheduler = build_scheduler(settings, blocking=True)

        def stop(signum: int, frame: Any) -> None:
            logger.info("signal %d: scheduler shutting down", signum)
            scheduler.shutdown(wait=False)

        signal.signal(signal.SIGTERM, stop)
        if on_start is not None:
            on_start(scheduler)
        scheduler.start()
