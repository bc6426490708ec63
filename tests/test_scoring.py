"""Step judgements, the sequential walk and each preset's knobs, on small hand-made tasks.
Every expected number is worked out in the comments."""

from __future__ import annotations

import pytest

from _scoring_tasks import BOX, CLICK, IN, OUT, make_task, preds, rec
from medspot.geometry import Box, Point
from medspot.scoring.protocol import Protocol, get_protocol
from medspot.scoring.score import (
    classify_failure,
    judge_step,
    latest_predictions,
    next_step,
    score_task,
    steps_to_ask_all,
)

V1 = get_protocol("medspot-v1")
A, B, C, D, E = (get_protocol(f"upstream-{x}") for x in "abcde")
UNANNOTATED: list[tuple[str, tuple[float, float, float, float]]] = []


def one_step_hit(
    p: tuple[float, float] | None,
    proto: Protocol = V1,
    box: tuple[float, float, float, float] = BOX,
    size: tuple[int, int] = (1000, 1000),
) -> bool:
    task = make_task("A", 0, [[("click", box)]])
    return judge_step(task.steps[0], proto, rec(task.steps[0].uid, p, size=size)).hit


# -- geometry -------------------------------------------------------------------------------------
def test_hit_edges_included_no_tolerance() -> None:
    assert one_step_hit((0.4, 0.4)) and one_step_hit((0.6, 0.6)) and one_step_hit((0.4, 0.6))
    assert not one_step_hit((0.6 + 1e-9, 0.5))
    assert not one_step_hit((0.5, 0.4 - 1e-9))


def test_pixel_tolerance_grows_every_side() -> None:
    # 7 px on a 1000 x 500 image: 0.007 in x, 0.014 in y; box 0.4..0.6
    tol7 = V1.with_tolerance(7)
    size = (1000, 500)
    for p in [(0.3935, 0.5), (0.6065, 0.5), (0.5, 0.3865), (0.5, 0.6135)]:
        assert one_step_hit(p, tol7, size=size), p
        assert not one_step_hit(p, V1, size=size), p
    for p in [(0.3925, 0.5), (0.6075, 0.5), (0.5, 0.3855), (0.5, 0.6145)]:
        assert not one_step_hit(p, tol7, size=size), p


def test_upstream_e_two_percent_tolerance() -> None:
    # 2% of min(1000, 500) = 10 px: 0.01 in x, 0.02 in y; upstream-b has 7 px: 0.007, 0.014
    size = (1000, 500)
    assert one_step_hit((0.391, 0.5), E, size=size)
    assert not one_step_hit((0.391, 0.5), B, size=size)
    assert one_step_hit((0.5, 0.381), E, size=size)
    assert not one_step_hit((0.5, 0.379), E, size=size)


def test_clamping_and_out_of_image_rules() -> None:
    edge_box = (0.9, 0.4, 1.0, 0.6)
    task = make_task("A", 0, [[("click", edge_box)]])
    r = rec(task.steps[0].uid, (1.3, 0.5))
    # upstream-a and -d clamp (1.3, 0.5) to (1.0, 0.5), on the box's right edge: a hit
    assert judge_step(task.steps[0], A, r).hit
    assert judge_step(task.steps[0], D, r).hit
    # medspot-v1 and upstream-c keep the point: a miss, typed edge_bias (x > 0.95)
    j = judge_step(task.steps[0], V1, r)
    assert not j.hit and j.point == Point(1.3, 0.5) and j.failure_type == "edge_bias"
    assert not judge_step(task.steps[0], C, r).hit
    # upstream-b: a point outside the image is no prediction
    j = judge_step(task.steps[0], B, r)
    assert not j.hit and j.point is None and j.failure_type == "no_prediction"


# -- failure taxonomy -----------------------------------------------------------------------------
def test_failure_order_v1() -> None:
    big = Box(*BOX)
    assert classify_failure(None, big) == "no_prediction"
    small = Box(0.5, 0.5, 0.51, 0.51)  # area 1e-4 < 4e-4
    assert classify_failure(Point(0.9, 0.9), small) == "small_target"
    # 1.5x scaling of BOX: 0.35..0.65
    assert classify_failure(Point(0.62, 0.5), big) == "near_miss"
    assert classify_failure(Point(0.5, 0.97), big) == "edge_bias"  # y > 0.95
    assert classify_failure(Point(0.02, 0.5), big) == "edge_bias"  # x < 0.05
    assert classify_failure(Point(0.5, 0.08), big) == "toolbar_confusion"  # 0.05 <= y < 0.12
    assert classify_failure(Point(0.5, 0.03), big) == "edge_bias"  # edge before toolbar
    assert classify_failure(Point(0.2, 0.8), big) == "far_miss"
    # near before edge: box 0.05..0.15 scaled 1.5 -> 0.025..0.175 holds x = 0.03
    left = Box(0.05, 0.4, 0.15, 0.6)
    assert classify_failure(Point(0.03, 0.5), left) == "near_miss"
    assert classify_failure(Point(0.03, 0.5), left, "upstream-b") == "edge_bias"
    # v1-edge-x (Qwen2.5-VL's script): the edge rule on x only
    assert classify_failure(Point(0.5, 0.97), big, "v1-edge-x") == "far_miss"


def test_failure_order_upstream_b_near_by_distance() -> None:
    big = Box(*BOX)  # centre (0.5, 0.5)
    # (0.62, 0.5): inside the 1.5x box (near for v1) but 0.12 from the centre: far for b
    assert classify_failure(Point(0.62, 0.5), big, "upstream-b") == "far_miss"
    box = Box(0.48, 0.48, 0.52, 0.52)  # area 0.0016, not small; 1.5x box 0.47..0.53
    assert classify_failure(Point(0.5, 0.525), box, "upstream-b") == "near_miss"  # d = 0.025
    assert classify_failure(Point(0.5, 0.535), box, "upstream-b") == "far_miss"  # d = 0.035
    # (0.522, 0.522): d = 0.022 * sqrt(2) = 0.0311 > 0.03 -> far for b, inside 1.5x -> near v1
    assert classify_failure(Point(0.522, 0.522), box, "upstream-b") == "far_miss"
    assert classify_failure(Point(0.522, 0.522), box, "v1") == "near_miss"
    # edge on x only, and toolbar before near
    assert classify_failure(Point(0.5, 0.97), big, "upstream-b") == "far_miss"
    assert classify_failure(Point(0.5, 0.03), big, "upstream-b") == "toolbar_confusion"
    assert classify_failure(Point(0.97, 0.5), big, "upstream-b") == "edge_bias"


def test_failure_order_upstream_e_splits_small() -> None:
    small = Box(0.5, 0.5, 0.51, 0.51)  # centre (0.505, 0.505)
    # (0.54, 0.5): d = sqrt(0.035^2 + 0.005^2) = 0.0354 < 0.05
    assert classify_failure(Point(0.54, 0.5), small, "upstream-e") == "small_target_near"
    # (0.6, 0.5): d = 0.095
    assert classify_failure(Point(0.6, 0.5), small, "upstream-e") == "small_target_far"
    assert classify_failure(Point(0.6, 0.5), small, "upstream-b") == "small_target"


# -- the walk -------------------------------------------------------------------------------------
def test_first_miss_ends_task_and_next_step() -> None:
    task = make_task("A", 0, [CLICK, CLICK, CLICK])
    s1, s2, s3 = task.steps
    assert next_step(task, V1, {}) == s1
    assert next_step(task, V1, preds(task, [IN])) == s2
    assert next_step(task, V1, preds(task, [IN, OUT])) is None  # a miss decides the task
    assert next_step(task, V1, preds(task, [IN, IN, IN])) is None
    ts = score_task(task, V1, preds(task, [IN, OUT]))
    assert [s.outcome for s in ts.steps] == ["hit", "miss", "not_reached"]
    assert ts.status == "scored" and ts.correct_steps == 1 and ts.failed_step == 2
    assert ts.failure_type == "far_miss"
    assert steps_to_ask_all(task) == [s1, s2, s3]


def test_drag_step_evaluable_under_v1_dropped_under_b() -> None:
    task = make_task("A", 0, [CLICK, [("drag", BOX)]])
    p = preds(task, [IN, IN])
    v1 = score_task(task, V1, p)
    assert (v1.completed, v1.correct_steps, v1.num_evaluable_steps, v1.num_steps) == (True, 2, 2, 2)
    # upstream-b drops the drag step: one evaluable step, reached and hit
    b = score_task(task, B, p)
    assert (b.completed, b.correct_steps, b.num_evaluable_steps, b.num_steps) == (True, 1, 1, 1)
    assert b.steps[1].outcome == "not_evaluable"
    assert next_step(task, B, preds(task, [IN])) is None  # b never asks the drag step
    assert next_step(task, V1, preds(task, [IN])) == task.steps[1]
    # upstream-a evaluates drags
    assert score_task(task, A, p).num_evaluable_steps == 2


def test_unannotated_step_completable_under_v1_never_under_c() -> None:
    task = make_task("A", 0, [CLICK, UNANNOTATED, CLICK])
    p = preds(task, [IN, ..., IN])
    assert next_step(task, V1, preds(task, [IN])) == task.steps[2]  # the walk skips step 2
    v1 = score_task(task, V1, p)
    assert v1.completed and v1.correct_steps == 2 and v1.num_steps == 2
    assert v1.num_unannotated_steps == 1
    c = score_task(task, C, p)
    # counted: 2 hits of 3 steps, never completed, SHR denominator 3
    assert not c.completed and c.correct_steps == 2 and c.num_steps == 3
    # upstream-c logs no miss: the last logged step is a hit -> an untyped failed task
    assert c.failure_type is None and c.histogram_type == "untyped"
    # upstream-e: counted too, but failure type from the first miss: none, not in the histogram
    e = score_task(task, E, p)
    assert not e.completed and e.histogram_type is None


def test_upstream_d_ends_at_non_evaluable_step_and_literal_step1() -> None:
    task = make_task("A", 0, [UNANNOTATED, CLICK])
    p = preds(task, [..., IN])
    assert next_step(task, D, {}) is None  # step 1 ends the task: nothing to ask
    d = score_task(task, D, p)
    assert not d.completed and d.correct_steps == 0 and not d.step1_hit
    assert d.failed_step == 1 and d.failure_type is None and d.steps[1].outcome == "not_reached"
    assert d.num_steps == 2
    # medspot-v1: step 1 dropped; S1A on the first evaluable step (step 2), a hit
    v1 = score_task(task, V1, p)
    assert v1.completed and v1.step1_hit
    # upstream-c: S1A on the first evaluable step, too; upstream-e: literal step 1
    assert score_task(task, C, p).step1_hit
    e = score_task(task, E, p)
    assert not e.step1_hit and e.correct_steps == 1

    # a non-evaluable step after a hit ends the task under d: a miss with no failure type
    t2 = make_task("A", 1, [CLICK, [("type", BOX)], CLICK])
    p2 = preds(t2, [IN, IN, IN])
    assert next_step(t2, D, preds(t2, [IN])) is None
    d2 = score_task(t2, D, p2)
    assert (d2.completed, d2.correct_steps, d2.failed_step, d2.num_steps) == (False, 1, 2, 3)
    assert d2.step1_hit and d2.failure_type is None
    assert score_task(t2, V1, p2).completed


def test_empty_task_handling() -> None:
    task = make_task("A", 0, [[("type", BOX)]])  # no step evaluable under the presets
    p = preds(task, [IN])
    assert score_task(task, A, p).num_evaluable_steps == 0  # type is not evaluable in a
    assert score_task(task, A, p).completed  # a: counts as completed
    assert score_task(task, A, p).status == "scored"
    b = score_task(task, B, p)
    assert b.status == "scored" and not b.completed  # counts, not completed
    unannotated = make_task("A", 1, [UNANNOTATED])
    assert score_task(unannotated, V1, {}).status == "excluded"
    # v1 evaluates the type step
    assert score_task(task, V1, p).completed


def test_wps_exponent_position() -> None:
    task = make_task("A", 0, [CLICK, UNANNOTATED, CLICK, CLICK])
    p = preds(task, [IN, ..., IN, IN])
    # v1: positions among evaluable steps 1, 2, 3: 1 + 0.8 + 0.64
    v1 = score_task(task, V1, p)
    assert v1.weighted_prefix_score == pytest.approx(2.44)
    assert v1.normalized_weighted_prefix_score == pytest.approx(1.0)
    # a: positions among all steps 1, 3, 4: 1 + 0.64 + 0.512; max over the same steps
    a = score_task(task, A, p)
    assert a.weighted_prefix_score == pytest.approx(2.152)
    assert a.normalized_weighted_prefix_score == pytest.approx(1.0)
    # e: counted step; max over all 4 steps 1 + 0.8 + 0.64 + 0.512 = 2.952
    e = score_task(task, E, p)
    assert e.weighted_prefix_score == pytest.approx(2.152)
    assert e.normalized_weighted_prefix_score == pytest.approx(2.152 / 2.952)


def test_shr_denominators() -> None:
    # hit, unannotated, miss, not reached
    task = make_task("A", 0, [CLICK, UNANNOTATED, CLICK, CLICK])
    p = preds(task, [IN, ..., OUT, IN])
    nums = {
        n: score_task(task, get_protocol(n), p).num_steps
        for n in ("medspot-v1", "upstream-a", "upstream-b", "upstream-c", "upstream-e")
    }
    # evaluable steps 3; reached 2 (the hit and the miss); all steps 4
    assert nums == {
        "medspot-v1": 3,
        "upstream-a": 2,
        "upstream-b": 2,
        "upstream-c": 4,
        "upstream-e": 2,
    }
    for n in nums:
        assert score_task(task, get_protocol(n), p).correct_steps == 1
    # d: ends at step 2, all 4 steps in the denominator
    d = score_task(task, D, p)
    assert d.num_steps == 4 and d.correct_steps == 1 and d.steps_evaluated == 1


def test_out_of_image_no_prediction_under_b() -> None:
    task = make_task("A", 0, [CLICK])
    b = score_task(task, B, preds(task, [(1.05, 0.5)]))
    assert b.failure_type == "no_prediction" and b.steps[0].pred_point is None
    v1 = score_task(task, V1, preds(task, [(1.05, 0.5)]))
    assert v1.failure_type == "edge_bias" and v1.steps[0].pred_point == Point(1.05, 0.5)


def test_several_boxes_any_vs_first() -> None:
    task = make_task("A", 0, [[("click", (0.1, 0.1, 0.2, 0.2)), ("click", BOX)]])
    p = preds(task, [IN])  # inside the second box only
    assert score_task(task, V1, p).completed
    assert not score_task(task, B, p).completed


# -- errors and the journal -----------------------------------------------------------------------
def test_latest_predictions() -> None:
    uid = "A/0/1"
    r1 = rec(uid, (0.1, 0.1))
    r2 = rec(uid, (0.5, 0.5))
    e1 = rec(uid, None, error="timeout")
    e2 = rec("A/0/2", None, error="429")
    ok, errored = latest_predictions([r1, e1, r2, e1, e2])
    assert ok == {uid: r2} and errored == {"A/0/2": e2}


def test_errored_and_missing_steps() -> None:
    task = make_task("A", 0, [CLICK, CLICK, CLICK])
    ok = preds(task, [IN])
    err = {task.steps[1].uid: rec(task.steps[1].uid, None, error="timeout")}
    ts = score_task(task, V1, ok, err)
    assert ts.status == "errored" and ts.missing_steps == (task.steps[1].uid,)
    assert [s.outcome for s in ts.steps] == ["hit", "error", "not_reached"]
    ts = score_task(task, V1, ok)
    assert ts.status == "incomplete" and ts.missing_steps == (task.steps[1].uid,)
    # a sequential run that stopped at a miss is complete under v1, but all-steps scoring
    # needs every evaluable step
    p = preds(task, [OUT])
    assert score_task(task, V1, p).status == "scored"
    ts = score_task(task, V1, p, all_steps=True)
    assert ts.status == "incomplete" and len(ts.missing_steps) == 2


def test_all_steps_independent_hits() -> None:
    task = make_task("A", 0, [CLICK, CLICK, CLICK])
    p = preds(task, [IN, OUT, IN])
    ts = score_task(task, V1, p, all_steps=True)
    assert ts.correct_steps == 1 and (ts.independent_hits, ts.independent_steps) == (2, 3)
    assert ts.steps[2].outcome == "not_reached" and ts.steps[2].hit is True
    seq = score_task(task, V1, p)
    assert seq.steps[2].hit is None and seq.independent_steps == 0


def test_step_details() -> None:
    task = make_task("A", 0, [CLICK])
    # (0.55, 0.45): offset ((0.55 - 0.5) / 0.2, (0.45 - 0.5) / 0.2) = (0.25, -0.25)
    ts = score_task(task, V1, preds(task, [(0.55, 0.45)], size=(800, 600)))
    s = ts.steps[0]
    assert s.offset == pytest.approx((0.25, -0.25))
    assert s.difficulty == "large" and s.image_size == (800, 600) and s.raw_output == "answer"
