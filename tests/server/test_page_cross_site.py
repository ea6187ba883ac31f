"""A hostile page in a real browser (the system Chromium): served from another origin, it
submits a form and fires ``fetch`` calls at the loopback server, as the drill that lifted a
kill-switch halt did. The halt stays, and the journal is unchanged."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from alphaloop.journal import Journal
from alphaloop.ops import pm
from alphaloop.settings import Settings

from .helpers import ARGS, CHROMIUM, add_trials, live_server, new_session
from .test_guard import fingerprint

HOSTILE = """<!doctype html><html><body>
<form id="f" method="POST" action="{base}/api/pm/resume?why=lifted+from+another+site"
      target="sink"><input name="x" value="1"></form>
<iframe name="sink"></iframe>
<script>
  const shots = [
    fetch("{base}/api/pm/resume", {{method: "POST", mode: "no-cors"}}),
    fetch("{base}/api/research/{sid}/stop", {{method: "POST", mode: "no-cors",
      headers: {{"Content-Type": "text/plain"}}, body: "{{}}"}}),
    fetch("{base}/api/pm/resume", {{method: "POST", headers: {{"X-Alphaloop": "1"}}}}),
    fetch("{base}/api/pm/resume", {{method: "POST",
      headers: {{"Content-Type": "application/json"}}, body: "{{}}"}}),
  ];
  Promise.allSettled(shots).then(() => {{ document.getElementById("f").submit(); }});
  setTimeout(() => {{ document.title = "fired"; }}, 1500);
</script></body></html>"""


def _hostile_site(html: str) -> tuple[ThreadingHTTPServer, str]:
    class Page(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = html.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    # another origin: "localhost" and another port (a same-site page, even)
    return server, f"http://localhost:{server.server_address[1]}/"


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="no system chromium on PATH")
def test_a_page_of_another_site_cannot_lift_a_halt(settings: Settings) -> None:
    from playwright.sync_api import sync_playwright

    with Journal(settings.journal_path) as j:
        sid = new_session(j, budget=50)
        add_trials(j, sid, 2)
        j.sessions.update(sid, status="running", owner_pid=None)
    pm.pm_halt(settings, "a drill", origin="cli")
    before = fingerprint(settings)
    with live_server(settings) as base:
        site, url = _hostile_site(HOSTILE.format(base=base, sid=sid))
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
                page = browser.new_page()
                refused: list[int] = []
                page.on(
                    "response",
                    lambda r: refused.append(r.status) if r.url.startswith(base) else None,
                )
                page.goto(url)
                page.wait_for_function("document.title === 'fired'", timeout=15_000)
                page.wait_for_timeout(1000)  # the form's answer lands in the frame
                browser.close()
        finally:
            site.shutdown()
    # the two simple fetches and the form reach the server and are refused; the two fetches
    # that need a CORS preflight are stopped by the browser itself (no grant is ever given)
    assert refused == [403, 403, 403], refused
    assert fingerprint(settings) == before
    assert pm.pm_status(settings).book.halted
