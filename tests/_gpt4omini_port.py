"""A port of the MedSPOT authors' `Evaluation_scripts/evaluate_gpt4omini.py`, shared by the
tests that compare medspot's `upstream-b` reading and scoring with the script's
(test_upstream_parity.py, test_parsers_upstream.py)."""

# ruff: noqa
from __future__ import annotations

import json
import math
import re
from collections import Counter, defaultdict
from pathlib import Path

from PIL import Image

# =================================================================================================
# PORT of the authors' evaluate_gpt4omini.py (commit ad61552): constants, geometry, failure
# taxonomy, `extract_pixel_point`, `normalize_prediction`, `evaluate_step`, `evaluate_task`,
# `compute_metrics`, `failure_statistics` and the main loop, transcribed as they are. Changes:
# `call_gpt(...)` is replaced by the scripted answer passed in; no image is encoded; debug
# printing removed; the image is opened for its size only (`.convert("RGB")` keeps the size).
# =================================================================================================
EARLY_STEP_ALPHA = 0.8
PATCH_SIZE = 14

SMALL_TARGET_AREA = 4e-4
MEDIUM_TARGET_AREA = 3e-3

EDGE_MARGIN = 0.05
TOOLBAR_Y_THRESHOLD = 0.12


def percent_bbox_xywh_to_pixel_xyxy(b, W, H):  # type: ignore[no-untyped-def]
    x, y, w, h = b
    return [
        x / 100.0 * W,
        y / 100.0 * H,
        (x + w) / 100.0 * W,
        (y + h) / 100.0 * H,
    ]


def bbox_area_ratio(b, W, H):  # type: ignore[no-untyped-def]
    return ((b[2] - b[0]) / W) * ((b[3] - b[1]) / H)


def bbox_center(b):  # type: ignore[no-untyped-def]
    return ((b[0] + b[2]) / 2.0, (b[1] + b[3]) / 2.0)


def boxes_overlap(a, b):  # type: ignore[no-untyped-def]
    return not (a[2] < b[0] or a[0] > b[2] or a[3] < b[1] or a[1] > b[3])


def l2_norm_pixel(p, q, W, H):  # type: ignore[no-untyped-def]
    return math.sqrt(((p[0] - q[0]) / W) ** 2 + ((p[1] - q[1]) / H) ** 2)


def difficulty_tag(area):  # type: ignore[no-untyped-def]
    if area < SMALL_TARGET_AREA:
        return "small"
    if area < MEDIUM_TARGET_AREA:
        return "medium"
    return "large"


def classify_failure(pred_point, gt_bbox, W, H):  # type: ignore[no-untyped-def]
    if pred_point is None:
        return "no_prediction"

    area = bbox_area_ratio(gt_bbox, W, H)
    if area < SMALL_TARGET_AREA:
        return "small_target"

    px, py = pred_point
    cx, cy = bbox_center(gt_bbox)

    if px < EDGE_MARGIN * W or px > (1 - EDGE_MARGIN) * W:
        return "edge_bias"

    if py < TOOLBAR_Y_THRESHOLD * H:
        return "toolbar_confusion"

    if l2_norm_pixel((px, py), (cx, cy), W, H) < 0.03:
        return "near_miss"

    return "far_miss"


def extract_pixel_point(text):  # type: ignore[no-untyped-def]
    patterns = [
        r"\(\s*([\d.]+)\s*,\s*([\d.]+)\s*\)",
        r"\[\s*([\d.]+)\s*,\s*([\d.]+)\s*\]",
        r"x\s*=\s*([\d.]+)\s*[,;]?\s*y\s*=\s*([\d.]+)",
        r"x\s*:\s*([\d.]+)\s*[,;]?\s*y\s*:\s*([\d.]+)",
        r"(?:at|click|point|coord(?:inate)?s?)\s*[:\-]?\s*([\d.]+)\s*[,\s]\s*([\d.]+)",
        r"(?<!\d)([\d]{1,5})\s*[,\s]\s*([\d]{1,5})(?!\d)",
    ]
    for p in patterns:
        m = re.search(p, text, re.IGNORECASE)
        if m:
            return float(m.group(1)), float(m.group(2))
    return None


def normalize_prediction(pred, W, H):  # type: ignore[no-untyped-def]
    if pred is None:
        return None
    x, y = pred
    if 0 <= x <= W and 0 <= y <= H:
        return (x, y)
    return None


def evaluate_step(image_size, raw_text, gt_bbox):  # type: ignore[no-untyped-def]
    W, H = image_size
    # (prompt built and `call_gpt` called here in the script; the answer is `raw_text`)
    pred = extract_pixel_point(raw_text)
    pred = normalize_prediction(pred, W, H)

    x1, y1, x2, y2 = gt_bbox

    if pred is not None:
        px, py = pred
        if x1 <= px <= x2 and y1 <= py <= y2:
            return True, "hit", pred, raw_text
        patch = [px - PATCH_SIZE / 2, py - PATCH_SIZE / 2, px + PATCH_SIZE / 2, py + PATCH_SIZE / 2]
        if boxes_overlap(patch, gt_bbox):
            return True, "hit_overlap", pred, raw_text

    return False, classify_failure(pred, gt_bbox, W, H), pred, raw_text


def evaluate_task(task, dataset_root, answer_for):  # type: ignore[no-untyped-def]
    steps = task.get("steps", [])
    correct = 0
    weighted = 0.0
    logs = []
    num_evaluable_steps = 0

    for idx, step in enumerate(steps, start=1):
        with Image.open(dataset_root / step["image_path"]) as image:
            size = image.size

        gt_action = next(
            (a for a in step.get("actions", []) if a.get("type") == "click" and "bbox" in a),
            None,
        )
        if gt_action is None:
            continue

        num_evaluable_steps += 1
        gt_bbox = percent_bbox_xywh_to_pixel_xyxy(gt_action["bbox"], *size)
        area = bbox_area_ratio(gt_bbox, *size)

        hit, reason, pred, raw = evaluate_step(size, answer_for(idx), gt_bbox)

        logs.append(
            {
                "step_id": idx,
                "hit": int(hit),
                "failure_type": None if hit else reason,
                "difficulty": difficulty_tag(area),
                "pred_point": pred,
                "raw_output": raw,
                "image_path": step["image_path"],
            }
        )

        if not hit:
            break

        correct += 1
        weighted += EARLY_STEP_ALPHA ** (idx - 1)

    completed = int(correct == num_evaluable_steps) if num_evaluable_steps > 0 else 0
    step1_hit = int(len(logs) > 0 and logs[0]["hit"] == 1)

    return {
        "task_overview": task.get("task_overview", ""),
        "completed": completed,
        "step1_hit": step1_hit,
        "correct_steps": correct,
        "num_steps": num_evaluable_steps,
        "weighted_prefix_score": weighted,
        "steps": logs,
    }


def compute_metrics(results):  # type: ignore[no-untyped-def]
    total = len(results)
    if total == 0:
        return {
            "task_completion_accuracy": 0.0,
            "step1_accuracy": 0.0,
            "avg_correct_prefix": 0.0,
            "step_hit_rate": 0.0,
            "avg_weighted_prefix_score": 0.0,
        }

    completed = sum(r["completed"] for r in results)
    step1_hits = sum(r["step1_hit"] for r in results)
    total_steps = sum(r["num_steps"] for r in results)
    correct_steps = sum(r["correct_steps"] for r in results)
    total_weighted = sum(r["weighted_prefix_score"] for r in results)

    return {
        "task_completion_accuracy": completed / total,
        "step1_accuracy": step1_hits / total,
        "avg_correct_prefix": correct_steps / total,
        "step_hit_rate": correct_steps / total_steps if total_steps else 0.0,
        "avg_weighted_prefix_score": total_weighted / total,
    }


def failure_statistics(results):  # type: ignore[no-untyped-def]
    counter: Counter[str] = Counter()
    by_difficulty: defaultdict[str, Counter[str]] = defaultdict(Counter)

    for r in results:
        if not r["completed"] and r["steps"]:
            s = r["steps"][-1]
            ft = s["failure_type"] or "unknown"
            diff = s.get("difficulty", "unknown")
            counter[ft] += 1
            by_difficulty[diff][ft] += 1

    return {
        "total_failed_tasks": sum(counter.values()),
        "failure_type_histogram": dict(counter),
        "failure_by_difficulty": {k: dict(v) for k, v in sorted(by_difficulty.items())},
    }


def upstream_main(data_dir, dataset_root, answer_of_uid):  # type: ignore[no-untyped-def]
    """The script's `__main__` loop, results kept in memory: per file, then overall."""
    per_file = {}
    all_results = []
    for json_file in sorted(Path(data_dir).rglob("*.json")):
        with open(json_file) as f:
            data = json.load(f)
        app = json_file.stem.removesuffix("_Annotation")  # (the port's: to name the answers)
        results = []
        for t_index, task in enumerate(data["tasks"]):

            def answer_for(idx, app=app, t_index=t_index):  # type: ignore[no-untyped-def]
                return answer_of_uid(f"{app}/{t_index}/{idx}")

            results.append(evaluate_task(task, dataset_root, answer_for))
        all_results.extend(results)
        per_file[app] = (results, compute_metrics(results), failure_statistics(results))
    return per_file, compute_metrics(all_results), failure_statistics(all_results)


# =================================================================================================
# end of the port
# =================================================================================================
