"""The seeded catalogue's names as check-parameter types, and `{level:NAME}` templates.

Tasks name seeded things by catalogue names (`medspot.live.services.seed`): patients by their
DICOM name (`DOE^JOHN`), studies (`CT-DOE-JOHN`), series (`CT-DOE-JOHN/AXIAL`), instances
(`CT-DOE-JOHN/AXIAL:3`, 1-based slice) and the phantoms' landmarks (`A`, `B`, `C`). The names
do not depend on the seed (only the UIDs do), so they are checked against `CATALOGUE` when a
task file is read, before anything starts. Routes and URL patterns embed names as templates,
`{study:CT-DOE-JOHN}`, which an environment replaces by its own IDs (`resolve_templates`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated

from pydantic import AfterValidator

from medspot.live.core.checks import pattern_matches_anything
from medspot.live.core.tasks import LiveTask
from medspot.live.services.seed import CATALOGUE, LANDMARKS, Catalogue

__all__ = [
    "TEMPLATE",
    "Landmark",
    "NameTable",
    "SeededInstance",
    "SeededPatient",
    "SeededPattern",
    "SeededSeries",
    "SeededStudy",
    "instance_names",
    "locator_name_problems",
    "pattern_is_vacuous",
    "person_name_problems",
    "resolve_templates",
    "template_problems",
    "unknown_name",
]

# a DICOM person name as the seeded catalogue writes them: FAMILY^GIVEN (capitals)
PERSON_NAME = re.compile(r"[A-Z][A-Z'-]*\^[A-Z][A-Z'-]*")
TEMPLATE = re.compile(r"\{(patient|study|series|instance):([^{}]+)\}")
NameTable = Mapping[str, Mapping[str, str]]  # level -> catalogue name -> an environment's ID


def instance_names(cat: Catalogue = CATALOGUE) -> dict[str, str]:
    """`SERIES:k` (1-based slice) -> SOPInstanceUID."""
    return {
        f"{se.name}:{k}": uid
        for se in cat.all_series()
        for k, uid in enumerate(se.instance_uids, start=1)
    }


def _known(level: str) -> list[str]:
    if level == "patient":
        return [p.name for p in CATALOGUE.patients]
    if level == "study":
        return [s.name for s in CATALOGUE.studies()]
    if level == "series":
        return [se.name for se in CATALOGUE.all_series()]
    if level == "instance":
        return list(instance_names())
    if level == "landmark":
        return sorted(LANDMARKS)
    raise ValueError(f"unknown level {level!r}")


def unknown_name(level: str, name: str) -> str | None:
    """Why `name` is not a seeded `level`, or None when it is."""
    known = _known(level)
    if name in known:
        return None
    if level == "instance":
        series = name.rpartition(":")[0]
        if series in _known("series"):
            n = CATALOGUE.series(series).slices
            return f"no seeded instance {name!r} (series {series} has slices 1..{n})"
        return f"no seeded instance {name!r} (SERIES:SLICE, e.g. CT-DOE-JOHN/AXIAL:3)"
    return f"no seeded {level} {name!r} (known: {', '.join(known)})"


def person_name_problems(text: str) -> list[str]:
    """The person names in `text` (a locator's text, `FAMILY^GIVEN`) that are no part of a
    seeded patient's name: an element that names them cannot be on the start screen."""
    names = [p.name for p in CATALOGUE.patients]
    return [
        f"no seeded patient's name contains {m.group(0)!r} (patients: {', '.join(names)})"
        for m in PERSON_NAME.finditer(text)
        if not any(m.group(0) in n for n in names)
    ]


def locator_name_problems(task: LiveTask) -> list[tuple[str, str]]:
    """The person names no seeded patient has in the `text` / `contains` of the locators of a
    task's steps and `start.prepare` steps, as (`steps.2.target`, message)."""
    return [
        (f"{place}.{name}", why)
        for place, name, loc in task.step_locators()
        for why in person_name_problems(loc.text or "") + person_name_problems(loc.contains or "")
    ]


def _checked(level: str) -> AfterValidator:
    def check(v: str) -> str:
        why = unknown_name(level, v)
        if why is not None:
            raise ValueError(why)
        return v

    return AfterValidator(check)


SeededPatient = Annotated[str, _checked("patient")]
SeededStudy = Annotated[str, _checked("study")]
SeededSeries = Annotated[str, _checked("series")]
SeededInstance = Annotated[str, _checked("instance")]
Landmark = Annotated[str, _checked("landmark")]


def template_problems(text: str, levels: tuple[str, ...] | None = None) -> list[str]:
    """The unknown names (and levels outside `levels`) among the templates of `text`."""
    out: list[str] = []
    for m in TEMPLATE.finditer(text):
        level, name = m.group(1), m.group(2)
        if levels is not None and level not in levels:
            out.append(f"{m.group(0)}: templates here name {', '.join(levels)} only")
            continue
        why = unknown_name(level, name)
        if why is not None:
            out.append(why)
    return out


def resolve_templates(text: str, table: NameTable, *, regex: bool = False) -> str:
    """`text` with every `{level:NAME}` replaced by `table[level][NAME]` (escaped for a regex
    when `regex`); a name the table lacks is a `KeyError` (validated names never are)."""

    def one(m: re.Match[str]) -> str:
        value = table[m.group(1)][m.group(2)]
        return re.escape(value) if regex else value

    return TEMPLATE.sub(one, text)


def _pattern(v: str) -> str:
    problems = template_problems(v)
    if problems:
        raise ValueError("; ".join(problems))
    try:
        re.compile(TEMPLATE.sub("0", v))
    except re.error as exc:
        raise ValueError(f"not a valid regular expression: {exc}") from None
    return v


# a regex searched in a text, with `{level:NAME}` templates allowed
SeededPattern = Annotated[str, AfterValidator(_pattern)]


def pattern_is_vacuous(pattern: str) -> bool:
    return pattern_matches_anything(TEMPLATE.sub("0", pattern))
