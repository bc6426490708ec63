"""The `orthanc-explorer` environment: Orthanc Explorer and the Orthanc Web Viewer in chromium.

Each instance owns one Orthanc (`OrthancServer`, seeded with `medspot.live.services.seed`) and one
chromium (`WebSession`). `reset(task)` brings the database back to the seeded studies through
REST (no restart), opens a fresh browser context at the task's start route and returns the
first screen. Routes and check parameters name seeded things by catalogue names; a route may
embed Orthanc IDs as `{patient:DOE^JOHN}`, `{study:CT-DOE-JOHN}`, `{series:CT-DOE-JOHN/AXIAL}`
or `{instance:CT-DOE-JOHN/AXIAL:3}` (1-based slice). A route starting with `#` is an Explorer
hash route (`/app/explorer.html#...`), one starting with `/` a path on the server.
"""

from __future__ import annotations

import logging
import re
import zipfile
from pathlib import Path
from typing import Any

from medspot.errors import DataError
from medspot.live.core.contract import (
    Observation,
)
from medspot.live.core.registry import EnvEntry, register_env
from medspot.live.core.tasks import CheckSpec, LiveTask, Locator
from medspot.live.drivers.web import WebSession
from medspot.live.envs.orthanc_web import OrthancWebEnv

__all__ = ["CHECK_KINDS", "LOCATOR_KEYS", "OrthancExplorerEnv", "create", "doctor"]

log = logging.getLogger(__name__)
NAME = "orthanc-explorer"
CHECK_KINDS = (
    "orthanc.patient_present",
    "orthanc.patient_absent",
    "orthanc.study_present",
    "orthanc.study_absent",
    "orthanc.series_present",
    "orthanc.series_absent",
    "orthanc.instance_count",
    "web.url_matches",
    "web.title_matches",
    "web.download",
    "web.element_visible",
    "webviewer.slice",
    "webviewer.inverted",
)
LOCATOR_KEYS = ("css", "text", "contains", "role", "nth", "at")
_TEMPLATE = re.compile(r"\{(patient|study|series|instance):([^{}]+)\}")
# jQuery Mobile is idle: no ajax running, no page transition, the hash route's page shown, and
# no clicked link (jQM marks it `ui-btn-active` until its page is shown) still on its way; that
# last sign is trusted for 2 s at most (a stale mark must not hang the settle)
_READY_JS = """() => {
  const $ = window.jQuery;
  if (!$ || !$.mobile || !$.mobile.activePage) return document.readyState === 'complete';
  if ($.active > 0 || $('.ui-mobile-viewport-transitioning, .ui-page.in, .ui-page.out').length) {
    return false;  // ajax running, or jQM's page fade (CSS animation: no DOM mutation) going on
  }
  const want = (location.hash.split('?')[0] || '').slice(1);
  if (want && document.getElementById(want) && $.mobile.activePage.attr('id') !== want) {
    return false;
  }
  const pending = $.mobile.activePage.find('.ui-btn-active').toArray().some((el) => {
    const a = el.matches('a[href]') ? el : el.querySelector('a[href]');
    const href = a && a.getAttribute('href');
    return !!href && href.length > 1 && href[0] === '#' && href !== location.hash;
  });
  if (!pending) { window.__medspotPending = 0; return true; }
  window.__medspotPending = window.__medspotPending || performance.now();
  return performance.now() - window.__medspotPending > 2000;
}"""
_VIEWER_SLICE_JS = (
    "() => { const s = window.jQuery && jQuery('#slider');"
    " return s && s.length && s.slider('instance') ? s.slider('option', 'value') : null; }"
)
_VIEWER_INVERT_JS = (
    "() => { const el = document.getElementById('dicomImage');"
    " try { return !!cornerstone.getViewport(el).invert; } catch (e) { return null; } }"
)


class OrthancExplorerEnv(OrthancWebEnv):
    """One Orthanc + one chromium, driven through Orthanc Explorer's pages."""

    name = NAME

    def __init__(
        self,
        workdir: Path,
        headless: bool = True,
        chromium: str = "/usr/bin/chromium",
        seed: int = 0,
        seed_cache: Path | None = None,
        extra_args: tuple[str, ...] = (),
        quiet_s: float = 0.25,
        settle_timeout_s: float = 15.0,
        orthanc_binary: str | None = None,
        fresh_context: bool = False,
    ) -> None:
        web = WebSession(
            Path(workdir) / "browser",
            chromium=chromium,
            headless=headless,
            extra_args=tuple(extra_args),
            quiet_s=quiet_s,
            settle_timeout_s=settle_timeout_s,
            ready_js=_READY_JS,
        )
        super().__init__(
            workdir, web, seed=seed, seed_cache=seed_cache, orthanc_binary=orthanc_binary
        )
        self.fresh_context = fresh_context  # a new browser context per task (slower)

    def reset(self, task: LiveTask) -> Observation:
        self.last_reset_s = self._reset_database()
        self.viewport = (int(task.start.viewport[0]), int(task.start.viewport[1]))
        self.web.viewport = self.viewport
        url = self.url_for(task.start.route or "#find-patients", task.id)
        if self.fresh_context:
            self.web.new_context()
            self.web.goto(url)
        else:
            self.web.fresh_page(url)
        return self.observe()

    # -- names -> Orthanc IDs -----------------------------------------------------------------

    def resolve(self, text: str, where: str = "route") -> str:
        """Replace `{level:name}` templates by Orthanc IDs."""

        def one(m: re.Match[str]) -> str:
            return self.orthanc_id(m.group(1), m.group(2), where)

        return _TEMPLATE.sub(one, text)

    def orthanc_id(self, level: str, name: str, where: str = "check") -> str:
        ids = self.ids
        table: dict[str, str]
        if level == "instance":
            series, _, k = name.rpartition(":")
            assert self.seed is not None
            try:
                uid = self.seed.catalogue.series(series).instance_uids[int(k) - 1]
            except (KeyError, ValueError, IndexError):
                raise DataError(f"{where}: no seeded instance {name!r}") from None
            return ids.instances[uid]
        table = {"patient": ids.patients, "study": ids.studies, "series": ids.series}[level]
        if name not in table:
            known = ", ".join(sorted(table))
            raise DataError(f"{where}: no seeded {level} {name!r} (known: {known})")
        return table[name]

    def url_for(self, route: str, task_id: str = "") -> str:
        route = self.resolve(route, f"task {task_id}: start.route")
        if route.startswith("#"):
            return f"{self.orthanc.url}/app/explorer.html{route}"
        if route.startswith("/"):
            return self.orthanc.url + route
        raise DataError(f"task {task_id}: start.route must start with '#' or '/': {route!r}")

    # -- the contract -------------------------------------------------------------------------

    def check(self, spec: CheckSpec) -> bool:
        p = spec.params
        kind = spec.kind
        if kind.startswith("orthanc."):
            self.orthanc.health()
        if kind in ("orthanc.patient_present", "orthanc.patient_absent"):
            return self._exists("patients", "patient", p) == kind.endswith("present")
        if kind in ("orthanc.study_present", "orthanc.study_absent"):
            return self._exists("studies", "study", p) == kind.endswith("present")
        if kind in ("orthanc.series_present", "orthanc.series_absent"):
            return self._exists("series", "series", p) == kind.endswith("present")
        if kind == "orthanc.instance_count":  # `count` (==), `min` and/or `max` (inclusive)
            if not {"count", "min", "max"} & set(p):
                raise DataError(f"check {kind!r} needs 'count', 'min' or 'max'")
            n = self._instance_count(p)
            return (
                n == int(p.get("count", n))
                and n >= int(p.get("min", n))
                and n <= int(p.get("max", n))
            )
        if kind == "web.url_matches":
            pattern = self.resolve(str(_param(p, "pattern", kind)), kind)
            return re.search(pattern, self.web.page.url if self.web.page else "") is not None
        if kind == "web.title_matches":
            title = self.web.eval("document.title") or ""
            return re.search(str(_param(p, "pattern", kind)), str(title)) is not None
        if kind == "web.element_visible":
            target = Locator.model_validate(_param(p, "target", kind))
            return self.web.locate(target) is not None
        if kind == "web.download":
            return self._downloaded(p)
        if kind == "webviewer.slice":
            value = self.web.eval(_VIEWER_SLICE_JS)
            return value is not None and int(value) + 1 == int(_param(p, "slice", kind))
        if kind == "webviewer.inverted":
            return self.web.eval(_VIEWER_INVERT_JS) is bool(p.get("value", True))
        raise DataError(f"check kind {kind!r} is not understood by {NAME}")

    def _exists(self, path: str, level: str, p: dict[str, Any]) -> bool:
        oid = self.orthanc_id(level, str(_param(p, level, f"orthanc.{level}")))
        return self.orthanc.get(f"/{path}/{oid}") is not None

    def _instance_count(self, p: dict[str, Any]) -> int:
        for level, path in (("series", "series"), ("study", "studies"), ("patient", "patients")):
            if level in p:
                oid = self.orthanc_id(level, str(p[level]))
                got = self.orthanc.get(f"/{path}/{oid}/instances")
                return len(got) if isinstance(got, list) else 0
        got = self.orthanc.get("/instances")
        return len(got) if isinstance(got, list) else 0

    def _downloaded(self, p: dict[str, Any]) -> bool:
        """A finished download of type `file` (zip/dicom/json/any) of the named resource."""
        want = str(p.get("file", "any"))
        parts: list[str] = []
        for level, path in (
            ("patient", "patients"),
            ("study", "studies"),
            ("series", "series"),
            ("instance", "instances"),
        ):
            if level in p:
                parts.append(f"/{path}/{self.orthanc_id(level, str(p[level]))}/")
        for d in self.web.downloads:
            if d.path is None or (want != "any" and d.kind != want):
                continue
            if not all(part in d.url for part in parts):
                continue
            if d.kind == "zip" and not _zip_ok(d.path):
                continue
            return True
        return False


def _zip_ok(path: Path) -> bool:
    try:
        with zipfile.ZipFile(path) as z:
            return bool(z.namelist()) and z.testzip() is None
    except (zipfile.BadZipFile, OSError):
        return False


def _param(p: dict[str, Any], name: str, kind: str) -> Any:
    if name not in p:
        raise DataError(f"check {kind!r} needs the parameter {name!r}")
    return p[name]


def doctor() -> list[str]:
    """What `medspot live doctor --env orthanc-explorer` reports beyond the Debian packages."""
    import os

    from medspot.live.services.orthanc import PLUGINS, orthanc_binary

    problems = []
    if orthanc_binary() is None:
        problems.append("the Orthanc executable is not on PATH (apt-get install orthanc)")
    plugins = os.listdir(PLUGINS) if os.path.isdir(PLUGINS) else []
    for lib, pkg in (("WebViewer", "orthanc-webviewer"), ("DicomWeb", "orthanc-dicomweb")):
        if not any(lib in f for f in plugins):
            problems.append(f"no {lib} plugin in {PLUGINS} (apt-get install {pkg})")
    if not os.access("/usr/bin/chromium", os.X_OK):
        problems.append("/usr/bin/chromium is missing (apt-get install chromium)")
    return problems


def create(workdir: Path, **options: Any) -> OrthancExplorerEnv:
    """The registry factory: `create_environment("orthanc-explorer", workdir=..., ...)`."""
    return OrthancExplorerEnv(workdir, **options)


register_env(
    EnvEntry(
        name=NAME,
        target="medspot.live.envs.orthanc_explorer:create",
        summary="Orthanc Explorer + Orthanc Web Viewer (Orthanc 1.10) in headless chromium",
        check_kinds=CHECK_KINDS,
        locator_keys=LOCATOR_KEYS,
        system_packages=(
            "orthanc",
            "orthanc-webviewer",
            "orthanc-dicomweb",
            "chromium",
            "fonts-dejavu-core",
        ),
        doctor="medspot.live.envs.orthanc_explorer:doctor",
        tasks_resource="orthanc_explorer.json",
    )
)
