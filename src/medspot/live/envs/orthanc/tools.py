"""The `orthanc` toolset (`--tools orthanc`): typed tools over the environment's own Orthanc REST
API, offered beside the GUI actions in every Orthanc-backed environment (orthanc-explorer, ohif).

    find_patients(patient_name?, patient_id?)                          /tools/find, Patient
    find_studies(patient_name?, patient_id?, study_description?, study_date?, modality?)
    find_series(patient_name?, study_description?, series_description?, modality?, study?)
    read_tags(id)                                 a resource's DICOM tags (/{level}/{id})
    delete_study(study), delete_series(series)    DELETE /studies/{id}, /series/{id}
    download_archive(id)                          the resource's ZIP (/{level}/{id}/archive)

Attribute values are DICOM matching (`*` and `?` wildcards, case-insensitive); the resources
are named by their Orthanc IDs, as the finds return them. The argument models below are the one
definition of each tool's arguments (their JSON schemas are what agents are shown). A deletion
is the same deletion as through the GUI: the task's `fail_if` checks judge it (harm). An archive
is written into the environment's private folder, not into the browser's downloads, so it does
not satisfy a `web.download` check (those tasks stay GUI-only: `medspot.live.core.tools`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from medspot.live.core.contract import EnvironmentFault
from medspot.live.core.harm import COLLATERAL_HARM
from medspot.live.core.tools import ToolArgsError, ToolOutcome, ToolSpec, check_tool_args
from medspot.live.services.orthanc import OrthancServer

__all__ = ["ORTHANC_TOOLS", "TOOLSET", "OrthancTools"]

TOOLSET = "orthanc"
_LEVELS = ("patients", "studies", "series", "instances")
_MAX_FOUND = 50  # at most this many resources per find are listed


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


_ATTR = "DICOM matching: '*' and '?' wildcards, case-insensitive"


class FindPatients(_Args):
    patient_name: str | None = Field(None, description=f"PatientName ({_ATTR}), e.g. DOE^J*")
    patient_id: str | None = Field(None, description="PatientID")


class FindStudies(_Args):
    patient_name: str | None = Field(None, description=f"PatientName ({_ATTR})")
    patient_id: str | None = Field(None, description="PatientID")
    study_description: str | None = Field(None, description=f"StudyDescription ({_ATTR})")
    study_date: str | None = Field(None, description="StudyDate, YYYYMMDD or a range A-B")
    modality: str | None = Field(None, description="a modality in the study, e.g. CT")


class FindSeries(_Args):
    patient_name: str | None = Field(None, description=f"PatientName ({_ATTR})")
    study_description: str | None = Field(None, description=f"StudyDescription ({_ATTR})")
    series_description: str | None = Field(None, description=f"SeriesDescription ({_ATTR})")
    modality: str | None = Field(None, description="Modality, e.g. MR")
    study: str | None = Field(None, description="only the series of this study (Orthanc ID)")


class ResourceId(_Args):
    id: str = Field(min_length=1, description="an Orthanc ID (patient, study, series, instance)")


class StudyId(_Args):
    study: str = Field(min_length=1, description="the study's Orthanc ID")


class SeriesId(_Args):
    series: str = Field(min_length=1, description="the series' Orthanc ID")


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

    def _find(self, level: str, query: dict[str, str]) -> list[dict[str, Any]]:
        body = {"Level": level, "Query": query, "Expand": True, "CaseSensitive": False}
        found = self.orthanc.request("POST", "/tools/find", json.dumps(body).encode())
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
        if not rid.replace("-", "").isalnum():
            raise ToolArgsError(f"id {rid!r}: not an Orthanc ID")
        for level in _LEVELS:
            found = self.orthanc.get(f"/{level}/{rid}")
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
            tags = self.orthanc.get(f"/instances/{p.id}/simplified-tags") or tags
        text = f"{level[:-1] if level != 'series' else 'series'} {p.id}: " + json.dumps(
            tags, ensure_ascii=False, sort_keys=True
        )
        return ToolOutcome(text, {"level": level, "tags": tags})

    def _delete(self, level: str, rid: str) -> ToolOutcome:
        if not rid.replace("-", "").isalnum():
            raise ToolArgsError(f"id {rid!r}: not an Orthanc ID")
        if not isinstance(self.orthanc.get(f"/{level}/{rid}"), dict):
            return ToolOutcome(f"no {level} has the ID {rid}: nothing deleted", {"deleted": False})
        self.orthanc.delete(f"/{level}/{rid}")
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
        data = self.orthanc.request("GET", f"/{level}/{p.id}/archive", timeout=60.0)
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
