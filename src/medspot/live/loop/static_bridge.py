"""The live runs seen through the static harness's metric formulas: `StaticRow` (a live task as
the static formulas read it, protocol.md 2.4) and `static_metrics` (the static metric keys of
the rows, with their bootstrap intervals, as the static writer puts them into
`overall_dataset_metrics.json`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

from medspot.runfolder.schema import RowCounts
from medspot.scoring.metrics import METRIC_KEYS, compute_metrics

__all__ = ["StaticRow", "static_metrics"]


@dataclass(frozen=True, slots=True, kw_only=True)
class StaticRow(RowCounts):
    """A live task seen through the static metric formulas (protocol.md 2.4), a row's counts
    (`runfolder.schema.RowCounts`): `correct_steps` is the number of the oracle's steps
    achieved, `steps_evaluated` the actions used."""

    status: str = "scored"
    num_unannotated_steps: int = 0


def static_metrics(
    rows: Sequence[StaticRow], *, n_boot: int, seed: int
) -> tuple[dict[str, Any], list[str]]:
    """The static metric keys (with their bootstrap intervals) of the rows, as the static
    writer puts them into `overall_dataset_metrics.json`, and the keys present."""
    ms = compute_metrics(cast(Any, rows), all_steps=False, n_boot=n_boot, seed=seed)
    return ms.to_json(), [k for k in METRIC_KEYS if k in ms.values]
