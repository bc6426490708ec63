"""The generic web session (shared by the web environments) on real chromium: locators keep
only visible, hit-testable elements (jQuery Mobile style duplicates, covered and below-fold
ones are dropped), settling waits for slow requests and DOM mutations, every action kind
reaches the page, downloads are recorded, popups are followed and a dead browser faults."""

from __future__ import annotations

import base64
import http.server
import io
import threading
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from _orthanc_support import CHROMIUM, require_live

from medspot.live.core.actions import Click, Done, Drag, Key, Scroll, TypeText
from medspot.live.core.contract import EnvironmentFault
from medspot.live.core.tasks import Locator
from medspot.live.drivers.web import KEY_TABLE, PLAYWRIGHT_KEYS, WebSession, playwright_key

pytestmark = pytest.mark.live

_ZIP = io.BytesIO()
with zipfile.ZipFile(_ZIP, "w") as _z:
    _z.writestr("a.txt", "hello")
ZIP_B64 = base64.b64encode(_ZIP.getvalue()).decode()

PAGE = f"""<!doctype html><html><head><style>
 body {{ margin: 0; font: 16px sans-serif; }} li {{ height: 40px; }}
 #cover {{ position: absolute; left: 0; top: 300px; width: 400px; height: 60px; background: #ccc; }}
 #under {{ position: absolute; left: 10px; top: 310px; }}
 #far {{ position: absolute; top: 1500px; }}
</style></head><body>
<div id="old" style="display:none"><ul><li><a href="#x">DOE^JOHN</a></li></ul></div>
<ul id="list">
 <li id="l1"><a href="#l1">DOE^JOAN</a><span class="count">1</span></li>
 <li id="l2"><a href="#l2">DOE^JOHN</a><span class="count">2</span></li>
 <li id="l3" style="visibility:hidden"><a>DOE^JOHN</a></li>
</ul>
<button id="b1" title="Reverse contrast">R</button>
<input id="in" value="">
<button id="slow">Load</button><div id="out"></div>
<button id="busy">Busy</button>
<div id="pad" style="position:absolute; left:600px; top:100px; width:300px; height:300px;
  background:#eef"></div>
<a id="dl" href="data:application/zip;base64,{ZIP_B64}" download="study.zip">Download ZIP</a>
<button id="pop" onclick="window.open(location.href + '#popup')">Open viewer</button>
<span id="under">Hidden under a cover</span><div id="cover"></div>
<div id="far">Below the fold</div>
<script>
 window.events = [];
 const pad = document.getElementById('pad');
 for (const t of ['mousedown', 'mousemove', 'mouseup', 'wheel', 'dblclick', 'contextmenu'])
   pad.addEventListener(t, (e) => {{
     window.events.push(t); if (t === 'contextmenu') e.preventDefault(); }});
 document.addEventListener('keydown', (e) => window.events.push('key:' + e.key));
 document.getElementById('slow').onclick = () =>
   fetch('/slow').then((r) => r.text()).then((t) => {{
     setTimeout(() => {{ document.getElementById('out').textContent = t; }}, 100); }});
 document.getElementById('busy').onclick = () =>
   setInterval(() => {{ document.getElementById('out').textContent = String(Math.random()); }}, 50);
</script></body></html>"""


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path.startswith("/slow"):
            time.sleep(0.6)
            body = b"loaded late"
            ctype = "text/plain"
        else:
            body, ctype = PAGE.encode(), "text/html"
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def web(tmp_path: Path, server: str) -> Iterator[WebSession]:
    require_live(Path(CHROMIUM).exists(), "chromium (apt-get install chromium)")
    pytest.importorskip("playwright.sync_api")
    s = WebSession(tmp_path, chromium=CHROMIUM, viewport=(1000, 700), settle_timeout_s=5)
    s.start()
    s.goto(server)
    yield s
    s.close()


def test_locate_keeps_visible_hit_testable_elements(web: WebSession) -> None:
    john = web.locate(Locator(css="li", contains="DOE^JOHN"))
    assert john is not None  # the hidden old page's and the invisible row's copies are dropped
    assert web.element_at(*john.center).key.startswith("li#l2")  # type: ignore[union-attr]
    assert web.locate(Locator(css="li", contains="DOE^JOHN", nth=1)) is None
    inner = web.locate(Locator(text="DOE^JOHN"))  # innermost element with that text
    assert inner is not None and john.contains(*inner.center) and inner.x2 - inner.x1 < 200
    assert web.locate(Locator(css="li", contains="DOE^JO", nth=1)) is not None
    assert web.locate(Locator(text="DOE^JO")) is None  # exact text
    assert web.locate(Locator(text="Reverse contrast", role="button")) is not None  # title
    assert web.locate(Locator(text="Hidden under a cover")) is None  # covered
    assert web.locate(Locator(text="Below the fold")) is None  # outside the viewport
    pad = web.locate(Locator(css="#pad"))
    pt = web.locate(Locator(css="#pad", at=(0.25, 0.5)))
    assert pad is not None and pt is not None and pt.center == (675.5, 250.5)
    web.act(Scroll(*john.center, 12))
    assert web.locate(Locator(text="Below the fold")) is not None


def test_settle_waits_for_requests_and_mutations(web: WebSession) -> None:
    box = web.locate(Locator(css="#slow"))
    assert box is not None
    res = web.act(Click(*box.center))
    assert web.eval("document.getElementById('out').textContent") == "loaded late"
    assert res.settle_s >= 0.6 and res.changed
    busy = web.locate(Locator(css="#busy"))
    assert busy is not None
    with pytest.raises(EnvironmentFault, match="did not settle"):
        web.act(Click(*busy.center))


def test_every_action_reaches_the_page(web: WebSession) -> None:
    pad = web.locate(Locator(css="#pad"))
    assert pad is not None
    x, y = pad.center
    web.act(Drag(x - 100, y - 100, x + 100, y + 50))
    web.act(Click(x, y, double=True))
    web.act(Click(x, y, button="right"))
    ev = web.eval("window.events")
    assert ev.count("mousedown") >= 3 and ev.count("mousemove") >= 5
    assert "dblclick" in ev and "contextmenu" in ev
    inp = web.locate(Locator(css="#in"))
    assert inp is not None
    web.act(Click(*inp.center))
    web.act(TypeText("DOE^JOAN"))
    web.act(Key("ctrl+a"))
    web.act(Key("backspace"))
    web.act(TypeText("x"))
    web.act(Key("enter"))
    assert web.eval("document.getElementById('in').value") == "x"
    assert "key:Enter" in web.eval("window.events")
    web.act(Scroll(x, y, 2))  # last: it scrolls the page
    assert web.eval("window.events").count("wheel") == 2
    assert web.act(Done()).changed is False
    assert playwright_key("ctrl+shift+f5") == "Control+Shift+F5"


def test_downloads_and_popups(web: WebSession) -> None:
    dl = web.locate(Locator(text="Download ZIP"))
    assert dl is not None
    web.act(Click(*dl.center))
    assert len(web.downloads) == 1
    rec = web.downloads[0]
    assert rec.filename == "study.zip" and rec.kind == "zip" and rec.path is not None
    assert zipfile.ZipFile(rec.path).read("a.txt") == b"hello"
    pop = web.locate(Locator(text="Open viewer"))
    assert pop is not None
    web.act(Click(*pop.center))
    url = web.observe().url
    assert url is not None and url.endswith("#popup")  # the session follows the new page


def test_closed_browser_is_an_environment_fault(web: WebSession) -> None:
    web.browser.close()
    with pytest.raises(EnvironmentFault):
        web.act(Click(10, 10))
    with pytest.raises(EnvironmentFault):
        web.observe()


def test_the_key_table_is_playwrights(web: WebSession) -> None:
    """Every key of `PLAYWRIGHT_KEYS` is pressed by Playwright in chromium, and the names next
    to it (F13, other spellings, other characters) are refused there as "Unknown key": the
    table the episode checks keys against is the driver's own."""
    page = web.context.new_page()  # a blank page: no key does anything there
    try:
        page.goto("about:blank")
        outside = ["F13", "F24", "Clear", "é", "NoSuchKeyXYZ", "ctrl", "enter", "Esc", "Win"]
        for key in [*sorted(PLAYWRIGHT_KEYS), *outside]:
            try:
                page.keyboard.press(key)
                pressed = True
            except Exception as e:  # Playwright's Error
                assert "Unknown key" in str(e), (key, e)
                pressed = False
            assert pressed == (key in PLAYWRIGHT_KEYS), key
    finally:
        page.close()
    assert KEY_TABLE.unknown("ctrl+shift+f5") is None and KEY_TABLE.unknown("Win") == "Win"
