"""`medspot eval --dry-run`: the calls a run would make and what they would cost, no call made."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from medspot.adapters.options import AdapterOptions
from medspot.dataset.images import ImageStore
from medspot.runfolder.journal import read_journal
from medspot.runfolder.layout import RunFolder
from medspot.scoring.score import latest_predictions, next_step, steps_to_ask_all

if TYPE_CHECKING:
    from medspot.pipeline import EvalRequest

__all__ = ["dry_run"]

log = logging.getLogger(__name__)


def dry_run(req: EvalRequest) -> str:
    """A plain-text plan: calls certain now, the most the run can make, the estimated cost."""
    protocol = req.run.protocol
    done, _ = latest_predictions(read_journal(RunFolder(req.out).journal))
    images = ImageStore(req.dataset.root)
    first: list[str] = []
    most = 0
    sizes: list[tuple[int, int]] = []
    for task in req.dataset.tasks():
        if req.run.all_steps:
            ready = [s for s in steps_to_ask_all(task) if s.uid not in done]
            first.extend(s.uid for s in ready)
            most += len(ready)
            sizes.extend(images.size(s.image_path) for s in ready)
            continue
        nxt = next_step(task, protocol, done)
        if nxt is None:
            continue
        first.append(nxt.uid)
        remaining = [s for s in task.steps if s.annotated and s.uid not in done]
        most += len(remaining)
        sizes.extend(images.size(s.image_path) for s in remaining)
    passes = req.zoom.passes if req.zoom is not None else 1
    lines = [
        f"dry run: {req.model} on {len(req.dataset.app_names)} apps, protocol "
        f"{req.protocol_name}, {'all steps' if req.run.all_steps else 'sequential'}",
        f"  already answered in {req.out}: {len(done)} steps",
        f"  calls certain now: {len(first)}; at most: {most}",
    ]
    if passes > 1:  # every pass of a zoom-in run is a call (a step may stop at its first)
        lines.append(
            f"  zoom-in, {passes} passes per step: at most {most * passes} model calls "
            f"({len(first) * passes} for the steps certain now)"
        )
        most *= passes
        sizes = sizes * passes  # the crops are smaller: an upper bound
    lines.extend(f"    {uid}" for uid in first[:10])
    if len(first) > 10:
        lines.append(f"    ... and {len(first) - 10} more")
    cost = _estimate(req, sizes)
    if cost is not None:
        lines.append(f"  estimated cost of at most {most} calls: ${cost:.4f}")
    else:
        lines.append("  estimated cost: no price known for this model (local or unpriced)")
    return "\n".join(lines)


def _estimate(req: EvalRequest, sizes: list[tuple[int, int]]) -> float | None:
    try:
        from medspot.adapters.backends.pricing import estimate_cost
    except ImportError:
        return None
    opts = AdapterOptions.from_mapping(req.options)
    price_file = opts.price_file
    model = str(opts.api_model or req.model)
    try:
        value = estimate_cost(model, sizes, price_file=price_file)
    except Exception as e:  # an estimate must not stop a dry run
        log.warning("cost estimate failed: %s", e)
        return None
    return None if value is None else float(value)
