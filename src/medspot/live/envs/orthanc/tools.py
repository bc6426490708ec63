"""The `orthanc` toolset (`--tools orthanc`): typed tools over the environment's own Orthanc REST
API, offered beside the GUI actions in every Orthanc-backed environment (orthanc-explorer, ohif).

    find_patients(patient_name?, patient_id?)                          /tools/find, Patient
    find_studies(patient_name?, patient_id?, study_description?, study_date?, modality?)
    find_series(patient_name?, study_description?, series_description?, modality?, study?)
    read_tags(id)                                 a resource's DICOM tags (/{level}/{id})
    delete_study(study), delete_series(series)    DELETE /studies/{id}, /series/{id}
    download_archive(id)                          the resource's ZIP (/{level}/{id}/archive)

Attribute values are DICOM matching (`*` and `?` wildcards, case-insensitive), at most
`MAX_ATTR_CHARS` characters; the resources are named by their Orthanc IDs, as the finds return
them: `ORTHANC_ID`, five groups of 8 lowercase hexadecimal digits joined by '-' (44 ASCII
characters; anything else, a full-width letter, a path, is refused before a request is made:
`bad_tool_args`). The argument models below are the one definition of each tool's arguments
(their JSON schemas are what agents are shown). What Orthanc refuses (HTTP 4xx) is the model's
mistake too (`bad_tool_args`, with Orthanc's status), an ID no resource has an answer ("no ...
has the ID"); only Orthanc down, a 5xx or a timeout is an `EnvironmentFault`. A deletion
is the same deletion as through the GUI: the task's `fail_if` checks judge it (harm). An archive
is written into the environment's private folder, not into the browser's downloads, so it does
not satisfy a `web.download` check (those tasks stay GUI-only: `medspot.live.core.tools`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from medspot.live.core.contract import EnvironmentFault
from medspot.live.core.harm import COLLATERAL_HARM
from medspot.live.core.tools import ToolArgsError, ToolOutcome, ToolSpec, check_tool_args
from medspot.live.services.orthanc import OrthancRefused, OrthancServer

__all__ = ["MAX_ATTR_CHARS", "ORTHANC_ID", "ORTHANC_TOOLS", "TOOLSET", "OrthancTools"]

TOOLSET = "orthanc"
_LEVELS = ("patients", "studies", "series", "instances")
_MAX_FOUND = 50  # at most this many resources per find are listed
# an Orthanc ID: the SHA-1 of the resource's DICOM UIDs, as Orthanc writes it
ORTHANC_ID = r"^[0-9a-f]{8}(-[0-9a-f]{8}){4}$"
MAX_ATTR_CHARS = 200  # a find's attribute value (a DICOM PN is at most 3 x 64 characters)


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


_ATTR = "DICOM matching: '*' and '?' wildcards, case-insensitive"
_ID = "44 characters: five groups of 8 lowercase hexadecimal digits joined by '-'"


def _attr(description: str) -> Any:
    return Field(None, max_length=MAX_ATTR_CHARS, description=description)


def _id(description: str) -> Any:
    return Field(pattern=ORTHANC_ID, max_length=44, description=f"{description} ({_ID})")


class FindPatients(_Args):
    patient_name: str | None = _attr(f"PatientName ({_ATTR}), e.g. DOE^J*")
    patient_id: str | None = _attr("PatientID")


class FindStudies(_Args):
    patient_name: str | None = _attr(f"PatientName ({_ATTR})")
    patient_id: str | None = _attr("PatientID")
    study_description: str | None = _attr(f"StudyDescription ({_ATTR})")
    study_date: str | None = _attr("StudyDate, YYYYMMDD or a range A-B")
    modality: str | None = _attr("a modality in the study, e.g. CT")


class FindSeries(_Args):
    patient_name: str | None = _attr(f"PatientName ({_ATTR})")
    study_description: str | None = _attr(f"StudyDescription ({_ATTR})")
    series_description: str | None = _attr(f"SeriesDescription ({_ATTR})")
    modality: str | None = _attr("Modality, e.g. MR")
    study: str | None = Field(
        None, pattern=ORTHANC_ID, max_length=44,
        description=f"only the series of this study (its Orthanc ID: {_ID})",
    )  # fmt: skip


class ResourceId(_Args):
    id: str = _id("an Orthanc ID (patient, study, series, instance)")


class StudyId(_Args):
    study: str = _id("the study's Orthanc ID")


class SeriesId(_Args):
    series: str = _id("the series' Orthanc ID")


ORTHANC_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec("find_patients", "Find patients in the PACS by name or ID.", FindPatients),
    ToolSpec("find_studies", "Find studies by patient, description, date or modality.",
             FindStudies),
    ToolSpec("find_series", "Find series by patient, study, description or modality.",
             FindSeries),
    ToolSpec("read_tags", "Read the DICOM tags of a patient, study, series or instance.",
             ResourceId),
    ToolSpec("delete_study", "Delete a study (all its series and instances) from the PACS.",
             StudyId, changes_state=True, harm=COLLATERAL_HARM),
    ToolSpec("delete_series", "Delete a series (all its instances) from the PACS.", SeriesId,
             changes_state=True, harm=COLLATERAL_HARM),
    ToolSpec("download_archive",
             "Download a patient, study or series as a ZIP archive (saved on the server side).",
             ResourceId),
)  # fmt: skip


def _tags(r: Mapping[str, Any]) -> dict[str, Any]:
    return {**(r.get("PatientMainDicomTags") or {}), **(r.get("MainDicomTags") or {})}


def _parent(r: Mapping[str, Any]) -> Any:
    return r.get("ParentPatient") or r.get("ParentStudy")


def _query(pairs: Mapping[str, str | None]) -> dict[str, str]:
    return {k: v for k, v in pairs.items() if v is not None and v != ""}


class OrthancTools:
    """The `orthanc` toolset bound to one environment's Orthanc (used from its thread)."""

    name = TOOLSET
    reads = frozenset({"orthanc"})

    def __init__(self, orthanc: OrthancServer, download_dir: Callable[[], Any]) -> None:
        self.orthanc = orthanc
        self._download_dir = download_dir

    @property
    def specs(self) -> tuple[ToolSpec, ...]:
        return ORTHANC_TOOLS

    def call(self, name: str, args: Mapping[str, Any]) -> ToolOutcome:
        params = check_tool_args(ORTHANC_TOOLS, name, args)
        fn: Callable[[Any], ToolOutcome] = getattr(self, f"_{name}")
        return fn(params)

    # -- finds ----------------------------------------------------------------------------------

    def _api(self, method: str, path: str, body: bytes | None = None, timeout: float = 10.0) -> Any:
        """One REST call made of the model's arguments: what Orthanc refuses (4xx) is theirs."""
        try:
            return self.orthanc.request(method, path, body, timeout=timeout)
        except OrthancRefused as e:
            raise ToolArgsError(f"Orthanc refused the request ({e})") from None

    def _find(self, level: str, query: dict[str, str]) -> list[dict[str, Any]]:
        body = {"Level": level, "Query": query, "Expand": True, "CaseSensitive": False}
        found = self._api("POST", "/tools/find", json.dumps(body).encode())
        return [r for r in (found or []) if isinstance(r, dict)]

    def _listing(self, what: str, rows: list[dict[str, Any]]) -> ToolOutcome:
        shown = rows[:_MAX_FOUND]
        lines = [
            f"{len(rows)} {what} found"
            + (f" (first {_MAX_FOUND})" if len(rows) > len(shown) else "")
        ]
        for r in shown:
            tags = {**(r.get("PatientMainDicomTags") or {}), **(r.get("MainDicomTags") or {})}
            lines.append(
                f"- {r.get('ID')}: " + json.dumps(tags, ensure_ascii=False, sort_keys=True)
            )
        data = [
            {
                "id": r.get("ID"),
                "tags": _tags(r),
                "parent": r.get("ParentPatient") or r.get("ParentStudy"),
            }
            for r in shown
        ]
        return ToolOutcome("\n".join(lines), {"found": len(rows), "resources": data})

    def _find_patients(self, p: FindPatients) -> ToolOutcome:
        q = _query({"PatientName": p.patient_name, "PatientID": p.patient_id})
        return self._listing("patients", self._find("Patient", q))

    def _find_studies(self, p: FindStudies) -> ToolOutcome:
        q = _query({"PatientName": p.patient_name, "PatientID": p.patient_id,
                    "StudyDescription": p.study_description, "StudyDate": p.study_date,
                    "ModalitiesInStudy": p.modality})  # fmt: skip
        return self._listing("studies", self._find("Study", q))

    def _find_series(self, p: FindSeries) -> ToolOutcome:
        q = _query({"PatientName": p.patient_name, "StudyDescription": p.study_description,
                    "SeriesDescription": p.series_description, "Modality": p.modality})  # fmt: skip
        rows = self._find("Series", q)
        if p.study is not None:
            rows = [r for r in rows if r.get("ParentStudy") == p.study]
        return self._listing("series", rows)

    # -- one resource ---------------------------------------------------------------------------

    def _resource(self, rid: str) -> tuple[str, dict[str, Any]]:
        _check_id(rid)
        for level in _LEVELS:
            found = self._api("GET", f"/{level}/{rid}")
            if isinstance(found, dict):
                return level, found
        raise _NotFound(f"no patient, study, series or instance has the ID {rid}")

    def _read_tags(self, p: ResourceId) -> ToolOutcome:
        try:
            level, res = self._resource(p.id)
        except _NotFound as e:
            return ToolOutcome(str(e), {"found": 0})
        tags = _tags(res)
        if level == "instances":
            tags = self._api("GET", f"/instances/{p.id}/simplified-tags") or tags
        text = f"{level[:-1] if level != 'series' else 'series'} {p.id}: " + json.dumps(
            tags, ensure_ascii=False, sort_keys=True
        )
        return ToolOutcome(text, {"level": level, "tags": tags})

    def _delete(self, level: str, rid: str) -> ToolOutcome:
        _check_id(rid)
        if not isinstance(self._api("GET", f"/{level}/{rid}"), dict):
            return ToolOutcome(f"no {level} has the ID {rid}: nothing deleted", {"deleted": False})
        self._api("DELETE", f"/{level}/{rid}")
        return ToolOutcome(f"deleted {level} {rid}", {"deleted": True, "level": level, "id": rid})

    def _delete_study(self, p: StudyId) -> ToolOutcome:
        return self._delete("studies", p.study)

    def _delete_series(self, p: SeriesId) -> ToolOutcome:
        return self._delete("series", p.series)

    def _download_archive(self, p: ResourceId) -> ToolOutcome:
        try:
            level, _ = self._resource(p.id)
        except _NotFound as e:
            return ToolOutcome(str(e), {"saved": False})
        if level == "instances":
            raise ToolArgsError("download_archive: a patient, study or series ID (not an instance)")
        data = self._api("GET", f"/{level}/{p.id}/archive", timeout=60.0)
        if not isinstance(data, bytes | bytearray) or not data.startswith(b"PK"):
            raise EnvironmentFault(f"Orthanc GET /{level}/{p.id}/archive: not a ZIP archive")
        folder = self._download_dir()
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{level}-{p.id}.zip"
        path.write_bytes(data)
        return ToolOutcome(
            f"saved the {level[:-1] if level != 'series' else 'series'} archive ({len(data)} "
            f"bytes) on the server side",
            {"saved": True, "level": level, "id": p.id, "bytes": len(data)},
        )


class _NotFound(Exception):
    pass


_ID_RE = re.compile(ORTHANC_ID)


def _check_id(rid: str) -> None:
    """The argument models checked the ID already; a toolset called without them (a bug)
    never puts anything else into a URL."""
    if not _ID_RE.fullmatch(rid):
        raise ToolArgsError(f"{rid[:60]!r} is not an Orthanc ID ({_ID})")
