"""``hifo ui``: a live dashboard of one run or of every run in a runs folder, served by the standard
library's ``http.server`` on 127.0.0.1.

Each run's page is the report page (:mod:`agents.html_report`) in live mode: its script polls
``/run/NAME/api/version`` (a few counters from the run store) and fetches ``/run/NAME/api/data`` when
they change, so the page follows a run while it works. Every request opens ``run.sqlite`` read-only
(SQLite ``mode=ro``; the run writes in WAL mode, so reading never blocks it) and closes it again.
Prompts are fetched one at a time (``/run/NAME/api/prompt/ID``). plotly.js is served from the ``plotly``
package (``/static/plotly.min.js``): nothing is fetched from the network.

Only loopback addresses are served unless ``allow_remote`` is set: the pages show candidates' code,
prompts and paths, and the server has no authentication. For the same reason a request whose ``Host``
header is not a loopback name or address is refused (403), so a page on another site cannot read the
dashboard through DNS rebinding.
"""

from __future__ import annotations

import ipaddress
import json
import socket
from html import escape
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from hifo.agents.run_view import RunViewError, change_stamp, load_prompt, load_view, page_json

LOOPBACK_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost"}


class DashboardError(RuntimeError):
    """The dashboard cannot start (a missing or damaged run, a refused host); the message says why."""


def is_loopback(host: str) -> bool:
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_host(host: str, allow_remote: bool) -> None:
    if not is_loopback(host) and not allow_remote:
        raise DashboardError(
            f"refusing to serve on {host}: the dashboard shows candidates' code, prompts and file paths to anyone "
            "who can reach it and has no authentication, so it serves on 127.0.0.1 only; pass --allow-remote to "
            "serve on another address anyway (for example behind your own SSH tunnel or firewall)")


class Site:
    """What the server serves: one run (``root`` holds run.sqlite) or every run folder under ``root``."""

    def __init__(self, root: str | Path, interval_ms: int = 1500, allow_remote: bool = False):
        self.root = Path(root).expanduser().resolve()
        self.interval_ms = interval_ms
        self.allow_remote = allow_remote
        if not self.root.exists():
            raise DashboardError(f"{self.root} does not exist (give a run folder or a folder of runs)")
        if not self.root.is_dir():
            raise DashboardError(f"{self.root} is not a folder (give a run folder or a folder of runs)")
        self.single = (self.root / "run.sqlite").exists()
        if self.single:  # a damaged single run is refused at start, with its path
            try:
                change_stamp(self.root)
            except RunViewError as exc:
                raise DashboardError(f"cannot read the run: {exc}") from exc

    def run_dir(self, name: str) -> Path | None:
        """The run folder a URL names: the run itself, or a direct child of the runs folder (no other path)."""
        if self.single:
            return self.root if name == self.root.name else None
        if not name or name in (".", "..") or "/" in name or "\\" in name:
            return None
        d = self.root / name
        return d if (d / "run.sqlite").exists() else None

    def index(self) -> str:
        from hifo.agents.report import list_runs

        if self.single:
            return ""
        rows = []
        for r in list_runs(self.root):
            name = Path(r["run"]).name
            link = (f'<a href="/run/{escape(name)}">{escape(name)}</a>' if (Path(r["run"]) / "run.sqlite").exists()
                    else escape(name))
            best = "" if r["best"] is None else f"{r['best']:.6g}"
            rows.append(f"<tr><td>{link}</td><td>{escape(str(r['problem']))}</td><td>{escape(str(r['model']))}</td>"
                        f"<td>{escape(str(r['status']))}</td><td>{r['evaluations']}</td><td>{best}</td></tr>")
        body = "".join(rows) or '<tr><td colspan="6">no runs in this folder yet</td></tr>'
        return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>hifo runs</title>'
                f'<meta http-equiv="refresh" content="5"><style>body{{font-family:system-ui,sans-serif;margin:20px}}'
                f"td,th{{border:1px solid #ccc;padding:3px 8px}}table{{border-collapse:collapse}}</style></head><body>"
                f"<h1>hifo runs in {escape(str(self.root))}</h1><table><tr><th>run</th><th>problem</th><th>model</th>"
                f"<th>status</th><th>evaluations</th><th>best</th></tr>{body}</table></body></html>")


def _plotly_bytes() -> bytes:
    from hifo.agents.html_report import plotly_js

    return plotly_js().encode()


class Handler(BaseHTTPRequestHandler):
    site: Site
    server_version = "hifo-ui"
    _plotly: bytes | None = None

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        pass  # one line per poll would drown the terminal

    def _send(self, status: int, body: str | bytes, ctype: str = "text/plain; charset=utf-8") -> None:
        data = body.encode() if isinstance(body, str) else body
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store" if "javascript" not in ctype else "max-age=3600")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        from hifo.agents.html_report import run_page

        parts = [unquote(p) for p in urlsplit(self.path).path.split("/") if p]
        site = self.site
        host = urlsplit("//" + (self.headers.get("Host") or "")).hostname or ""
        if not site.allow_remote and not is_loopback(host):  # a page elsewhere reaching us by DNS rebinding
            return self._send(403, f"this dashboard answers only to 127.0.0.1/localhost, not to {host!r}")
        try:
            if not parts:
                if site.single:
                    self.send_response(HTTPStatus.FOUND)
                    self.send_header("Location", f"/run/{site.root.name}")
                    self.end_headers()
                    return
                return self._send(200, site.index(), "text/html; charset=utf-8")
            if parts == ["static", "plotly.min.js"]:
                if Handler._plotly is None:
                    Handler._plotly = _plotly_bytes()
                return self._send(200, Handler._plotly, "application/javascript; charset=utf-8")
            if len(parts) >= 2 and parts[0] == "run":
                run = site.run_dir(parts[1])
                if run is None:
                    where = site.root if site.single else site.root / parts[1]
                    return self._send(404, f"no hifo run at {where}")
                rest = parts[2:]
                if not rest:
                    page = run_page(f"hifo run {run.name}", api=f"/run/{run.name}/api/",
                                    plotly_src="/static/plotly.min.js", interval_ms=site.interval_ms)
                    return self._send(200, page, "text/html; charset=utf-8")
                if rest == ["api", "version"]:
                    return self._send(200, change_stamp(run))
                if rest == ["api", "data"]:
                    return self._send(200, page_json(load_view(run, prompts=False)), "application/json")
                if len(rest) == 3 and rest[:2] == ["api", "prompt"]:
                    p = load_prompt(run, rest[2])
                    return self._send(200, json.dumps(p), "application/json") if p else \
                        self._send(404, f"no prompt {rest[2]} in {run}")
            self._send(404, f"nothing at {self.path}")
        except RunViewError as exc:  # a damaged store: the page shows this line, with the path
            self._send(500, str(exc))
        except (BrokenPipeError, ConnectionResetError):
            pass


class _V6Server(ThreadingHTTPServer):
    address_family = socket.AF_INET6


def make_server(root: str | Path, host: str = "127.0.0.1", port: int = 8765, *, allow_remote: bool = False,
                interval_ms: int = 1500) -> ThreadingHTTPServer:
    """A server for ``root`` (not yet serving: call ``serve_forever``); ``port`` 0 picks a free one."""
    check_host(host, allow_remote)
    site = Site(root, interval_ms, allow_remote)
    handler = type("SiteHandler", (Handler,), {"site": site})
    server_cls: type[ThreadingHTTPServer] = _V6Server if ":" in host else ThreadingHTTPServer
    try:
        server = server_cls((host, port), handler)
    except OSError as exc:
        raise DashboardError(f"cannot listen on {host}:{port}: {exc.strerror or exc}"
                             + (" (pick another with --port)" if port else "")) from exc
    server.daemon_threads = True
    return server


def url_of(server: ThreadingHTTPServer) -> str:
    host, port = server.server_address[:2]
    host = str(host)
    return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"
