"""The REST API and the web page (``alphaloop serve``): FastAPI over the operations layer.

:func:`create_app` builds the application for one alphaloop home; long work (sessions, manual
runs, DPO, ticks, scheduler jobs) runs as typed jobs in worker processes (``alphaloop.ops.jobs``),
never inside a request, and is read back from the journal.
"""

from alphaloop.server.app import create_app
from alphaloop.server.security import check_bind, is_loopback

__all__ = ["check_bind", "create_app", "is_loopback"]
