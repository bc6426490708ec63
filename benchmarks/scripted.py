"""A scripted model for benchmarks and reliability tests, served by `OpenAITestServer`.

The *server* knows the annotations (the harness never does): for every (screenshot, instruction)
it answers a rel1000 point inside the first target box for a "hit" step and a point outside
every box for a "miss" step. Which steps miss is a fixed function of the step identity and
`miss_rate`, so two runs over the same data get the same answers, whatever the order of calls.

`protocol_minimum(...)` walks the tasks with those answers the way a sequential run must and
returns the calls the protocol needs and the longest chain of dependent calls.
"""

from __future__ import annotations

import hashlib
import math
import zlib
from dataclasses import dataclass

from medspot.dataset.images import ImageStore
from medspot.dataset.records import Dataset, Step
from medspot.geometry import Box
from medspot.runfolder.journal import JournalRecord
from medspot.scoring.protocol import Protocol
from medspot.scoring.score import next_step, steps_to_ask_all
from medspot.testing.openai_server import SeenRequest

__all__ = ["ScriptedAnswers", "protocol_minimum"]

_TEMPLATE_TAIL = "\nGive the single point to click"


def _inside_point(box: Box) -> tuple[int, int]:
    """An integer rel1000 point inside `box` (its centre rounded inwards when possible)."""

    def axis(lo: float, hi: float) -> int:
        a, b = math.ceil(lo * 1000), math.floor(hi * 1000)
        if a <= b:
            return (a + b) // 2
        return round((lo + hi) * 500)

    return axis(box.x1, box.x2), axis(box.y1, box.y2)


def _outside_point(boxes: tuple[Box, ...]) -> tuple[int, int]:
    """A rel1000 point at least 5% away from every box (a corner of the screen, mostly)."""
    for x, y in ((5, 995), (995, 995), (995, 5), (5, 5), (500, 995), (5, 500)):
        px, py = x / 1000, y / 1000
        if all(
            not (b.x1 - 0.05 <= px <= b.x2 + 0.05 and b.y1 - 0.05 <= py <= b.y2 + 0.05)
            for b in boxes
        ):
            return x, y
    return 0, 0


@dataclass(frozen=True)
class _Entry:
    answer: str
    point: tuple[float, float]


class ScriptedAnswers:
    """The answer function of the test server: `OpenAITestServer(answer=ScriptedAnswers(ds))`."""

    def __init__(self, dataset: Dataset, *, miss_rate: float = 0.2, seed: int = 0) -> None:
        self.dataset = dataset
        self.miss_rate = miss_rate
        self.seed = seed
        self.by_key: dict[tuple[str, str], _Entry] = {}
        self.unknown = 0  # requests the script could not place (should stay 0)
        digests: dict[str, str] = {}
        for step in dataset.steps():
            if not step.annotated:
                continue
            rel = step.image_path
            if rel not in digests:
                digests[rel] = hashlib.sha256((dataset.root / rel).read_bytes()).hexdigest()
            key = (digests[rel], step.instruction)
            if key not in self.by_key:  # same screenshot and instruction: same answer
                self.by_key[key] = self._entry(step)
        self._digest_of = digests

    def is_hit(self, uid: str) -> bool:
        return zlib.crc32(f"{self.seed}:{uid}".encode()) % 10_000 >= self.miss_rate * 10_000

    def _entry(self, step: Step) -> _Entry:
        x, y = _inside_point(step.boxes[0]) if self.is_hit(step.uid) else _outside_point(step.boxes)
        return _Entry(f"({x}, {y})", (x / 1000, y / 1000))

    def entry_for(self, step: Step) -> _Entry:
        return self.by_key[(self._digest_of[step.image_path], step.instruction)]

    def __call__(self, req: SeenRequest) -> str:
        img = req.image
        instruction = req.text.rpartition(_TEMPLATE_TAIL)[0] or req.text
        entry = self.by_key.get((img.sha256 if img else "", instruction.strip()))
        if entry is None:
            self.unknown += 1
            return "I cannot see it."
        return entry.answer


@dataclass(frozen=True)
class Minimum:
    calls: int  # calls the protocol needs
    chain: int  # longest chain of dependent calls (the critical path, in calls)


def protocol_minimum(
    dataset: Dataset, script: ScriptedAnswers, protocol: Protocol, *, all_steps: bool = False
) -> Minimum:
    """The calls a run must make with these answers, and its longest dependent chain."""
    sizes = ImageStore(dataset.root)
    calls = chain = 0
    for task in dataset.tasks():
        if all_steps:
            n = len(steps_to_ask_all(task))
            calls += n
            chain = max(chain, 1 if n else 0)
            continue
        preds: dict[str, JournalRecord] = {}
        n = 0
        while (step := next_step(task, protocol, preds)) is not None:
            e = script.entry_for(step)
            preds[step.uid] = JournalRecord(
                step=step.uid,
                task=task.uid,
                image_path=step.image_path,
                image_size=sizes.size(step.image_path),
                point=e.point,
            )
            n += 1
        calls += n
        chain = max(chain, n)
    return Minimum(calls, chain)
