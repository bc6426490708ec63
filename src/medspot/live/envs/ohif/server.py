"""A small same-origin HTTP server for the OHIF Viewer, inside the harness.

It serves the prebuilt viewer's `dist/` at `/` (unknown paths fall back to `index.html`, as
the viewer's client-side router expects), answers `/app-config.js` with a configuration
generated for one Orthanc, and forwards `/dicom-web/...` and `/wado...` to that Orthanc. One
origin for everything: no CORS, and the COOP/COEP headers make the page cross-origin isolated
(the viewer's decoders want SharedArrayBuffer). Runs on a free loopback port in a thread of
its own; `close()` stops it.
"""

from __future__ import annotations

import http.client
import json
import logging
import mimetypes
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from medspot.errors import MedspotError

__all__ = ["OhifServer", "app_config_js", "upstream_path"]

log = logging.getLogger(__name__)

_PROXIED = ("/dicom-web/", "/dicom-web?", "/wado")
_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade"}
_TYPES = {".js": "text/javascript", ".mjs": "text/javascript", ".wasm": "application/wasm"}
_ISOLATION = {
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Embedder-Policy": "require-corp",
    "Cross-Origin-Resource-Policy": "same-origin",
}


def app_config_js(origin: str, *, workers: int = 2) -> str:
    """The viewer's `window.config`: one DICOMweb data source at this origin (forwarded to
    Orthanc), no investigational-use dialog, no cross-origin/CPU warnings."""
    config: dict[str, Any] = {
        "routerBasename": None,
        "extensions": [],
        "modes": [],
        "customizationService": {},
        "showStudyList": True,
        "maxNumberOfWebWorkers": workers,
        "showWarningMessageForCrossOrigin": False,
        "showCPUFallbackMessage": False,
        "showLoadingIndicator": True,
        "strictZSpacingForVolumeViewport": True,
        "investigationalUseDialog": {"option": "never"},
        "defaultDataSourceName": "orthanc",
        "dataSources": [
            {
                "namespace": "@ohif/extension-default.dataSourcesModule.dicomweb",
                "sourceName": "orthanc",
                "configuration": {
                    "friendlyName": "Orthanc (medspot live)",
                    "name": "orthanc",
                    "qidoRoot": origin + "/dicom-web",
                    "wadoRoot": origin + "/dicom-web",
                    "wadoUriRoot": origin + "/wado",
                    "qidoSupportsIncludeField": True,
                    "supportsReject": False,
                    "imageRendering": "wadors",
                    "thumbnailRendering": "wadors",
                    "enableStudyLazyLoad": True,
                    "supportsFuzzyMatching": False,
                    "supportsWildcard": True,
                    "omitQuotationForMultipartRequest": True,
                    "bulkDataURI": {"enabled": True},
                },
            }
        ],
    }
    return "window.config = " + json.dumps(config, indent=1) + ";\n"


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # the browser cancels requests (navigation, a new task): a broken pipe is routine
        log.debug("ohif-server: request from %s failed", client_address, exc_info=True)


def upstream_path(path: str) -> str:
    """The request path for Orthanc: a comma-separated `includefield=a,b` (what the viewer
    sends) becomes repeated `includefield=a&includefield=b` (what Orthanc's DICOMweb plugin
    reads; with the comma form it drops the fields, and the study list shows no
    descriptions)."""
    parts = urlsplit(path)
    if "includefield" not in parts.query:
        return path
    query: list[tuple[str, str]] = []
    for k, v in parse_qsl(parts.query, keep_blank_values=True):
        if k == "includefield":
            query += [(k, f) for f in v.split(",") if f]
        else:
            query.append((k, v))
    return parts.path + "?" + urlencode(query)


class OhifServer:
    """Serve `dist` and forward DICOMweb to `orthanc_url` (e.g. "http://127.0.0.1:8042")."""

    def __init__(self, dist: Path, orthanc_url: str, *, host: str = "127.0.0.1") -> None:
        if not (dist / "index.html").is_file():
            raise MedspotError(f"{dist}: not an OHIF dist folder (no index.html)")
        self.dist = dist.resolve()
        parts = urlsplit(orthanc_url)
        if parts.hostname is None or parts.port is None:
            raise MedspotError(f"Orthanc URL needs a host and port: {orthanc_url!r}")
        self._upstream = (parts.hostname, parts.port)
        self._index = (self.dist / "index.html").read_bytes()
        self._httpd = _Server((host, 0), self._handler_class())
        self.port: int = self._httpd.server_address[1]
        self.url = f"http://{host}:{self.port}"
        self._config = app_config_js(self.url).encode()
        self._thread: threading.Thread | None = None

    def start(self) -> OhifServer:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._httpd.serve_forever, name=f"ohif-server-{self.port}", daemon=True
            )
            self._thread.start()
        return self

    def close(self) -> None:
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._httpd.server_close()

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                log.debug("ohif-server: " + format, *args)

            def do_GET(self) -> None:
                server._serve(self, head=False)

            def do_HEAD(self) -> None:
                server._serve(self, head=True)

            def do_POST(self) -> None:
                server._forward(self)

            def do_DELETE(self) -> None:
                server._forward(self)

        return Handler

    def _serve(self, h: BaseHTTPRequestHandler, *, head: bool) -> None:
        path = urlsplit(h.path).path
        if path.startswith(_PROXIED) or path == "/dicom-web":
            self._forward(h)
            return
        if path == "/app-config.js":
            self._send(h, 200, "text/javascript", self._config, head=head, cache=False)
            return
        target = (self.dist / path.lstrip("/")).resolve()
        if target.is_relative_to(self.dist) and target.is_file():
            ctype = _TYPES.get(target.suffix) or mimetypes.guess_type(target.name)[0]
            immutable = ".bundle." in target.name or target.suffix in (".wasm", ".woff2")
            h.send_response(200)
            self._headers(h, ctype or "application/octet-stream", target.stat().st_size)
            h.send_header(
                "Cache-Control", "max-age=31536000, immutable" if immutable else "no-cache"
            )
            h.end_headers()
            if not head:
                with target.open("rb") as f:
                    h.connection.sendfile(f)
            return
        self._send(h, 200, "text/html; charset=utf-8", self._index, head=head, cache=False)

    def _headers(self, h: BaseHTTPRequestHandler, ctype: str, length: int) -> None:
        h.send_header("Content-Type", ctype)
        h.send_header("Content-Length", str(length))
        for k, v in _ISOLATION.items():
            h.send_header(k, v)

    def _send(
        self,
        h: BaseHTTPRequestHandler,
        code: int,
        ctype: str,
        body: bytes,
        *,
        head: bool,
        cache: bool,
    ) -> None:
        h.send_response(code)
        self._headers(h, ctype, len(body))
        if not cache:
            h.send_header("Cache-Control", "no-cache")
        h.end_headers()
        if not head:
            h.wfile.write(body)

    def _forward(self, h: BaseHTTPRequestHandler) -> None:
        length = int(h.headers.get("Content-Length") or 0)
        body = h.rfile.read(length) if length else None
        headers = {k: v for k, v in h.headers.items() if k.lower() not in _HOP}
        conn = http.client.HTTPConnection(*self._upstream, timeout=60)
        try:
            conn.request(h.command, upstream_path(h.path), body=body, headers=headers)
            resp = conn.getresponse()
            data = resp.read()
        except (OSError, http.client.HTTPException) as exc:
            msg = f"Orthanc unreachable: {exc}".encode()
            self._send(h, 502, "text/plain", msg, head=h.command == "HEAD", cache=False)
            return
        finally:
            conn.close()
        h.send_response(resp.status, resp.reason)
        for k, v in resp.getheaders():
            if k.lower() not in _HOP and k.lower() != "content-length":
                h.send_header(k, v)
        h.send_header("Content-Length", str(len(data)))
        h.send_header("Cross-Origin-Resource-Policy", "same-origin")
        h.end_headers()
        if h.command != "HEAD":
            h.wfile.write(data)
