"""``alphaloop serve``: the REST API and the web page."""

from __future__ import annotations

import typer

from alphaloop.cli._app import console, guarded
from alphaloop.settings import get_settings


def serve(
    host: str = typer.Option(
        "127.0.0.1", help="address to bind; anything but loopback needs ALPHALOOP_API_TOKEN"
    ),
    port: int = typer.Option(8000, min=1, max=65535, help="port to listen on"),
) -> None:
    """Serve the REST API (/api, schema at /docs) and the page (/) until Ctrl-C.

    Sessions, manual runs and scheduler jobs started from the API run in worker processes.
    With ALPHALOOP_API_TOKEN set, POST routes need 'Authorization: Bearer <token>'; binding
    anything but loopback needs it, and then every API route asks for it.

    Example: alphaloop serve --port 8000

    Example: ALPHALOOP_API_TOKEN=s3cret alphaloop serve --host 0.0.0.0
    """
    import uvicorn

    from alphaloop.server import check_bind, create_app

    settings = get_settings()
    auth_reads = guarded(check_bind, host, settings)
    app = create_app(settings, auth_reads=auth_reads, bind_host=host)
    console.print(f"alphaloop serving {settings.home} at http://{host}:{port}/ (API docs at /docs)")
    uvicorn.run(app, host=host, port=port, log_level="warning")
