"""Scoring protocols as data: the knobs of protocol.md section 3, the canonical `medspot-v1` and
the compatibility presets `upstream-a`..`upstream-e` that reproduce the authors' scripts.

One scoring code path (`medspot.scoring.score`) reads these knobs; a preset is only a set of values.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any, Literal

from medspot.dataset.records import Step
from medspot.errors import ConfigError
from medspot.geometry import Box

__all__ = [
    "DEFAULT_PROTOCOL",
    "PRESETS",
    "BoxSelection",
    "EmptyTask",
    "FailureOrder",
    "NonEvaluable",
    "OutOfImage",
    "Protocol",
    "S1AStep",
    "ShrDenominator",
    "TaskFailureSource",
    "WpsPosition",
    "get_protocol",
    "protocol_names",
]

BoxSelection = Literal["any", "first"]
NonEvaluable = Literal["dropped", "counted", "ends_task"]
EmptyTask = Literal["excluded", "completed", "not_completed"]
OutOfImage = Literal["kept", "clamped", "no_prediction"]
ShrDenominator = Literal["evaluable", "reached", "all_steps"]
S1AStep = Literal["first_evaluable", "literal_first"]
WpsPosition = Literal["evaluable", "all_steps"]
# v1: protocol 2.5; v1-edge-x: 2.5 with the edge rule on x only (Qwen2.5-VL's script);
# upstream-b: edge (x only), toolbar, then near by centre distance < 0.03;
# upstream-e: as upstream-b, small split into small_target_near/far by distance < 0.05.
FailureOrder = Literal["v1", "v1-edge-x", "upstream-b", "upstream-e"]
TaskFailureSource = Literal["ending_miss", "last_logged", "first_miss"]

DEFAULT_PROTOCOL = "medspot-v1"


@dataclass(frozen=True)
class Protocol:
    """Every rule that decides a score. See docs/protocol.md."""

    name: str
    evaluable_types: frozenset[str] | None  # None: every action with a bbox
    box_selection: BoxSelection  # any box of the evaluable actions, or only the first
    non_evaluable: NonEvaluable  # what a step with no evaluable target does to its task
    empty_task: EmptyTask  # a task with no evaluable step
    tolerance_px: float  # grows every box on all sides, pixels of the original
    tolerance_frac: float  # the same as a fraction of min(W, H); added to tolerance_px
    out_of_image: OutOfImage  # a point outside 0..1
    shr_denominator: ShrDenominator
    s1a_step: S1AStep
    wps_position: WpsPosition  # exponent i of alpha^(i-1): among evaluable steps or all steps
    failure_order: FailureOrder
    task_failure_source: TaskFailureSource
    alpha: float = 0.8
    description: str = ""
    tolerance_overridden: bool = False

    @property
    def prompt_style(self) -> Literal["native", "upstream"]:
        """The prompt a preset's numbers were made with: the authors' for upstream-*."""
        return "upstream" if self.name.startswith("upstream-") else "native"

    # -- knobs applied to one step --------------------------------------------------------------
    def action_counts(self, action_type: str) -> bool:
        return self.evaluable_types is None or action_type in self.evaluable_types

    def targets(self, step: Step) -> tuple[Box, ...]:
        """The boxes a step is judged against under this protocol (empty: not evaluable)."""
        types = self.evaluable_types
        boxes = tuple(a.box for a in step.actions if types is None or a.type in types)
        if self.box_selection == "first":
            return boxes[:1]
        return boxes

    def evaluable(self, step: Step) -> bool:
        return bool(self.targets(step))

    def tolerance_for(self, image_size: tuple[int, int]) -> float:
        """The hit tolerance in pixels for an image of `image_size` (width, height)."""
        return self.tolerance_px + self.tolerance_frac * min(image_size)

    @property
    def has_tolerance(self) -> bool:
        return self.tolerance_px > 0 or self.tolerance_frac > 0

    def max_weighted_prefix(self, evaluable_positions: Sequence[int], num_steps: int) -> float:
        """The WPS a task scores when every evaluable step is hit (what nWPS divides by): the
        sum of alpha^(i-1) over the ranks of its evaluable steps (`evaluable_positions`, their
        1-based positions among the task's `num_steps` steps)."""
        if self.wps_position == "evaluable":
            return sum(self.alpha**i for i in range(len(evaluable_positions)))
        if self.non_evaluable == "dropped":
            return sum(self.alpha ** (pos - 1) for pos in evaluable_positions)
        return sum(self.alpha**i for i in range(num_steps))

    def with_tolerance(self, px: float) -> Protocol:
        """The same protocol with the tolerance replaced by `px` pixels (e.g. SeeClick: 0)."""
        if not 0 <= px < math.inf:
            raise ConfigError(f"the tolerance must be a finite number >= 0 pixels, not {px}")
        return replace(self, tolerance_px=float(px), tolerance_frac=0.0, tolerance_overridden=True)

    @property
    def label(self) -> str:
        """The name, with the tolerance when it was overridden."""
        if self.tolerance_overridden:
            return f"{self.name} (tolerance {self.tolerance_px:g} px)"
        return self.name

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["evaluable_types"] = (
            sorted(self.evaluable_types) if self.evaluable_types is not None else None
        )
        return d


_CLICK = frozenset({"click"})

PRESETS: dict[str, Protocol] = {
    p.name: p
    for p in (
        Protocol(
            name="medspot-v1",
            evaluable_types=None,
            box_selection="any",
            non_evaluable="dropped",
            empty_task="excluded",
            tolerance_px=0.0,
            tolerance_frac=0.0,
            out_of_image="kept",
            shr_denominator="evaluable",
            s1a_step="first_evaluable",
            wps_position="evaluable",
            failure_order="v1",
            task_failure_source="ending_miss",
            description="canonical: every annotated box counts, no tolerance, no clamping",
        ),
        Protocol(
            name="upstream-a",
            evaluable_types=frozenset({"click", "double_click", "drag"}),
            box_selection="first",
            non_evaluable="dropped",
            empty_task="completed",
            tolerance_px=14.0,
            tolerance_frac=0.0,
            out_of_image="clamped",
            shr_denominator="reached",
            s1a_step="first_evaluable",
            wps_position="all_steps",
            failure_order="v1",
            task_failure_source="last_logged",
            description="Aguvis, CogAgent, DeepSeek-VL2, Mistral, OS-Atlas, Qwen2-VL, UGround",
        ),
        Protocol(
            name="upstream-b",
            evaluable_types=_CLICK,
            box_selection="first",
            non_evaluable="dropped",
            empty_task="not_completed",
            tolerance_px=7.0,
            tolerance_frac=0.0,
            out_of_image="no_prediction",
            shr_denominator="reached",
            s1a_step="first_evaluable",
            wps_position="all_steps",
            failure_order="upstream-b",
            task_failure_source="last_logged",
            description="GPT-4o-mini, GPT-5",
        ),
        Protocol(
            name="upstream-c",
            evaluable_types=_CLICK,
            box_selection="first",
            non_evaluable="counted",
            empty_task="not_completed",
            tolerance_px=7.0,
            tolerance_frac=0.0,
            out_of_image="kept",
            shr_denominator="all_steps",
            s1a_step="first_evaluable",
            wps_position="all_steps",
            failure_order="upstream-b",
            task_failure_source="last_logged",
            description="Gemma3, Llama-3.2, Qwen3-VL, Qwen2.5-VL",
        ),
        Protocol(
            name="upstream-d",
            evaluable_types=_CLICK,
            box_selection="first",
            non_evaluable="ends_task",
            empty_task="not_completed",
            tolerance_px=14.0,
            tolerance_frac=0.0,
            out_of_image="clamped",
            shr_denominator="all_steps",
            s1a_step="literal_first",
            wps_position="all_steps",
            failure_order="v1",
            task_failure_source="last_logged",
            description="GUI-Actor, SeeClick (SeeClick: tolerance 0, use --tolerance 0)",
        ),
        Protocol(
            name="upstream-e",
            evaluable_types=_CLICK,
            box_selection="first",
            non_evaluable="counted",
            empty_task="not_completed",
            tolerance_px=0.0,
            tolerance_frac=0.02,
            out_of_image="kept",
            shr_denominator="reached",
            s1a_step="literal_first",
            wps_position="all_steps",
            failure_order="upstream-e",
            task_failure_source="first_miss",
            description="UI-TARS",
        ),
    )
}


def protocol_names() -> tuple[str, ...]:
    return tuple(PRESETS)


def get_protocol(name: str, tolerance_px: float | None = None) -> Protocol:
    """The named protocol, with its tolerance replaced when `tolerance_px` is given."""
    try:
        proto = PRESETS[name]
    except KeyError:
        raise ConfigError(
            f"unknown protocol '{name}'; choose one of: {', '.join(PRESETS)}"
        ) from None
    if tolerance_px is not None:
        proto = proto.with_tolerance(tolerance_px)
    return proto
