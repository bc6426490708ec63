"""medspot: the reference evaluation harness for MedSPOT.

The library API, imported lazily (`import medspot` stays cheap)::

    import medspot
    ds = medspot.load_dataset("path/to/MedSPOT")
    out = medspot.evaluate(medspot.EvalRequest(dataset=ds, model="oracle", out=Path("runs/o")))
    opts = medspot.RunOptions(protocol=medspot.get_protocol("upstream-a"), concurrency=4)
    out = medspot.evaluate(medspot.EvalRequest(dataset=ds, model="oracle", out=Path("runs/a"),
                                               run=opts))   # how the runner asks the model
    info, score = medspot.rescore(Path("runs/o"), ds, protocol_name="upstream-a")
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from medspot._version import __version__

if TYPE_CHECKING:
    from medspot.adapters.options import AdapterOptions
    from medspot.dataset.loading import load_dataset
    from medspot.errors import (
        AdapterUnavailable,
        BudgetExceeded,
        ConfigError,
        DataError,
        MedspotError,
        ModelCallError,
        RunFolderError,
        TransientModelError,
    )
    from medspot.pipeline import EvalOutcome, EvalRequest, evaluate, rescore
    from medspot.runfolder.reader import load_run, load_runs
    from medspot.runner import RunOptions
    from medspot.scoring.protocol import Protocol, get_protocol
    from medspot.scoring.score import score_run

__all__ = [
    "AdapterOptions",
    "AdapterUnavailable",
    "BudgetExceeded",
    "ConfigError",
    "DataError",
    "EvalOutcome",
    "EvalRequest",
    "MedspotError",
    "ModelCallError",
    "Protocol",
    "RunFolderError",
    "RunOptions",
    "TransientModelError",
    "__version__",
    "evaluate",
    "get_protocol",
    "load_dataset",
    "load_run",
    "load_runs",
    "rescore",
    "score_run",
]

_HOMES = {
    "AdapterOptions": "medspot.adapters.options",
    "load_dataset": "medspot.dataset.loading",
    "EvalOutcome": "medspot.pipeline",
    "EvalRequest": "medspot.pipeline",
    "evaluate": "medspot.pipeline",
    "rescore": "medspot.pipeline",
    "load_run": "medspot.runfolder.reader",
    "load_runs": "medspot.runfolder.reader",
    "RunOptions": "medspot.runner",
    "Protocol": "medspot.scoring.protocol",
    "get_protocol": "medspot.scoring.protocol",
    "score_run": "medspot.scoring.score",
    **dict.fromkeys(
        (
            "AdapterUnavailable",
            "BudgetExceeded",
            "ConfigError",
            "DataError",
            "MedspotError",
            "ModelCallError",
            "RunFolderError",
            "TransientModelError",
        ),
        "medspot.errors",
    ),
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'medspot' has no attribute {name!r}")
    return getattr(importlib.import_module(home), name)
