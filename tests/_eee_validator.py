"""Every Eval Ever's validation of a datastore folder, for tests: its released JSON schemas
(tests/fixtures/every_eval_ever, version 0.3.0) and the rules its validator (`every_eval_ever
validate`, package every-eval-ever 0.3.0: the pydantic models' validators and the registered
checks of `validator/validation_core.py`) adds to them, restated here from their documented
behaviour:

- schema: each aggregate against `eval.schema.json`, each samples line against
  `instance_level_eval.schema.json` (draft 7);
- metric bounds: a `continuous` score needs `min_score` and `max_score` (a number, or the
  strings "Infinity" / "-Infinity"; null is missing), min <= max, the score finite and between
  them, the uncertainty's numbers finite;
- interaction type: `single_turn` has an `output` and no `messages`, the others `messages` and
  no `output`;
- model metadata: `deployment_type` one of self_deployed, externally_managed, unknown;
  `model_availability` one of open_weights, closed_weights, unknown;
- path: `data/<collection>/<developer>/<model>/<uuid4>.json` (or `_samples.jsonl`), portable
  components, none of them `data`;
- companion: the aggregate names exactly its sibling `<uuid>_samples.jsonl`, format `jsonl`,
  with at least one row, `total_rows` rows, and the aggregate's evaluation id and model id;
- identity (a warning): the folders are the model id's owner and name (a flat id:
  `model_info.developer`, which must be known), further slashes and colons as `_`.

The package itself needs Python 3.12 (this project supports 3.11), so it is not a test
dependency; `validate_with_package` runs it too where it is installed.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import jsonschema

SCHEMAS = Path(__file__).parent / "fixtures" / "every_eval_ever"
_UUID4 = r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"
_AGGREGATE = re.compile(rf"{_UUID4}\.json")
_SAMPLES = re.compile(rf"{_UUID4}_samples\.jsonl")
_UNPORTABLE = re.compile(r'[<>:"\\|?*\x00-\x1f]')
_DEVICES = {"CON", "PRN", "AUX", "NUL", *(f"{d}{i}" for d in ("COM", "LPT") for i in range(1, 10))}
_DEPLOYMENT = {"self_deployed", "externally_managed", "unknown"}
_AVAILABILITY = {"open_weights", "closed_weights", "unknown"}


def _schema(name: str) -> jsonschema.Draft7Validator:
    return jsonschema.Draft7Validator(json.loads((SCHEMAS / name).read_text()))


def _bound(v: Any) -> float | None:
    if v == "Infinity":
        return math.inf
    if v == "-Infinity":
        return -math.inf
    if isinstance(v, int | float) and not isinstance(v, bool) and not math.isnan(v):
        return float(v)
    return None


def _finite(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def _metric_errors(i: int, result: dict[str, Any]) -> list[str]:
    out: list[str] = []
    mc = result.get("metric_config") or {}
    lo, hi = _bound(mc.get("min_score")), _bound(mc.get("max_score"))
    if mc.get("score_type") == "continuous":
        out += [f"results[{i}]: continuous needs {k}" for k, b in
                (("min_score", lo), ("max_score", hi)) if b is None]  # fmt: skip
    if mc.get("score_type") == "levels" and (
        "level_names" not in mc or "has_unknown_level" not in mc
    ):
        out.append(f"results[{i}]: levels need level_names and has_unknown_level")
    details = result.get("score_details") or {}
    raw = details.get("score")
    if not _finite(raw):
        return [*out, f"results[{i}]: score {raw!r} is not finite"]
    score = float(raw or 0.0)  # finite, checked above
    unc = details.get("uncertainty") or {}
    ci = unc.get("confidence_interval") or {}
    numbers = [unc.get("standard_deviation"), *(ci.get(k) for k in ("lower", "upper"))]
    out += [f"results[{i}]: uncertainty {v!r}" for v in numbers if v is not None and not _finite(v)]
    if lo is not None and hi is not None:
        if lo > hi:
            out.append(f"results[{i}]: min_score {lo} > max_score {hi}")
        elif not lo <= score <= hi:
            out.append(f"results[{i}]: score {score} outside [{lo}, {hi}]")
    return out


def _path_errors(rel: str) -> list[str]:
    parts = rel.split("/")
    if len(parts) != 5 or parts[0] != "data" or any(p in ("", ".", "..") for p in parts):
        return [f"{rel}: not data/<collection>/<developer>/<model>/<file>"]
    out = []
    for part in parts[1:4]:
        if (
            part == "data"
            or _UNPORTABLE.search(part)
            or part.endswith((".", " "))
            or part.split(".", 1)[0].upper() in _DEVICES
        ):
            out.append(f"{rel}: {part!r} is not a portable folder name")
    if not (_AGGREGATE.fullmatch(parts[4]) or _SAMPLES.fullmatch(parts[4])):
        out.append(f"{rel}: {parts[4]!r} is not <uuid4>.json or <uuid4>_samples.jsonl")
    return out


def _identity_errors(rel: str, log: dict[str, Any]) -> list[str]:
    info = log.get("model_info") or {}
    model_id = str(info.get("id", ""))
    if "/" in model_id:
        owner, name = model_id.split("/", 1)
    else:
        owner, name = str(info.get("developer") or ""), model_id
    folder = [p.replace(":", "_") for p in (owner, name.replace("/", "_"))]
    if not owner or owner == "unknown":
        return [f"{rel}: model id {model_id!r} names no developer folder"]
    if rel.split("/")[2:4] != folder:
        return [f"{rel}: model id {model_id!r} is filed under {'/'.join(folder)}"]
    return []


def _instance_errors(rel: str, text: str, log: dict[str, Any]) -> list[str]:
    schema = _schema("instance_level_eval.schema.json")
    out: list[str] = []
    rows = [line for line in text.splitlines() if line.strip()]
    if not rows:
        out.append(f"{rel}: no row")
    for n, line in enumerate(rows, 1):
        rec = json.loads(line)
        out += [f"{rel}:{n}: {e.message}" for e in schema.iter_errors(rec)]
        single = rec.get("interaction_type") == "single_turn"
        if single and (rec.get("output") is None or rec.get("messages") is not None):
            out.append(f"{rel}:{n}: single_turn needs output and no messages")
        if not single and (rec.get("messages") is None or rec.get("output") is not None):
            out.append(f"{rel}:{n}: {rec.get('interaction_type')} needs messages and no output")
        if rec.get("evaluation_id") != log.get("evaluation_id"):
            out.append(f"{rel}:{n}: evaluation_id differs from the aggregate's")
        if rec.get("model_id") != (log.get("model_info") or {}).get("id"):
            out.append(f"{rel}:{n}: model_id differs from the aggregate's model_info.id")
    detail = log.get("detailed_evaluation_results") or {}
    if detail.get("total_rows") != len(rows):
        out.append(f"{rel}: total_rows {detail.get('total_rows')} but {len(rows)} rows")
    return out


def validate(root: Path) -> tuple[list[str], list[str]]:
    """The validator's errors and warnings on the datastore under `root` (`root/data/...`)."""
    aggregates = sorted(root.glob("data/*/*/*/*.json"))
    samples = {p.relative_to(root).as_posix() for p in root.glob("data/*/*/*/*_samples.jsonl")}
    if not aggregates:
        return [f"no aggregate under {root}/data"], []
    schema = _schema("eval.schema.json")
    out: list[str] = []
    warnings: list[str] = []
    named: set[str] = set()
    for path in aggregates:
        rel = path.relative_to(root).as_posix()
        log = json.loads(path.read_text())
        out += [f"{rel}: {e.message}" for e in schema.iter_errors(log)]
        out += _path_errors(rel)
        warnings += _identity_errors(rel, log)
        for i, result in enumerate(log.get("evaluation_results") or []):
            out += [f"{rel}: {e}" for e in _metric_errors(i, result)]
        details = (log.get("model_info") or {}).get("additional_details") or {}
        if details.get("deployment_type", "unknown") not in _DEPLOYMENT:
            out.append(f"{rel}: deployment_type {details.get('deployment_type')!r}")
        if details.get("model_availability", "unknown") not in _AVAILABILITY:
            out.append(f"{rel}: model_availability {details.get('model_availability')!r}")
        detail = log.get("detailed_evaluation_results")
        sibling = rel[: -len(".json")] + "_samples.jsonl"
        if detail is None:
            if sibling in samples:
                out.append(f"{rel}: {sibling} exists but is not declared")
            continue
        if detail.get("file_path") != sibling or detail.get("format") != "jsonl":
            out.append(f"{rel}: the companion must be {sibling}, format jsonl")
            continue
        if sibling not in samples:
            out.append(f"{rel}: {sibling} is missing")
            continue
        named.add(sibling)
        out += _path_errors(sibling)
        out += _instance_errors(sibling, (root / sibling).read_text(), log)
    out += [f"{s}: no aggregate points to it" for s in sorted(samples - named)]
    return out, warnings


def validate_with_package(root: Path) -> tuple[list[str], list[str]]:
    """The same folder through the every-eval-ever package's own validator (where installed:
    it needs Python 3.12): its errors and warnings."""
    from every_eval_ever.validator import validation_core as core  # type: ignore[import-not-found]

    files = {p.relative_to(root).as_posix() for p in root.glob("data/*/*/*/*") if p.is_file()}
    out: list[str] = []
    warnings: list[str] = []
    for rel in sorted(files):
        report = core.validate_file(
            root / rel,
            repo_path=rel,
            available_files=files,
            read_repo_file=lambda r: (root / r).read_text(encoding="utf-8"),
            run_semantic_checks=True,
        )
        out += [f"{rel}: {core.format_error(e)}" for e in report.errors]
        warnings += [f"{rel}: {core.format_warning(w)}" for w in report.warnings]
    return out, warnings
