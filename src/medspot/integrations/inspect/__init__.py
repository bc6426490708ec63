"""MedSPOT in Inspect AI (`pip install 'medspot[inspect]'`, docs/integrations.md).

- `tasks`: the `@task`s Inspect finds through the package's `inspect_ai` entry point
  (`inspect eval medspot/medspot`, `inspect eval medspot/medspot_live`);
- `static_task`: the static benchmark: a sample per MedSPOT task, its steps walked under a
  protocol with a model card's prompt, image and parser (`model_call`: the card asked
  through Inspect's model), scored by `medspot.scoring`;
- `live_task`: MedSPOT-Live: a sample per live task, Inspect's ReAct agent acting through
  `medspot live serve --mcp` (stdio), scored from the run folder the server writes;
- `rows`: pure mappings between medspot's rows and Inspect's score values and metrics;
- `logfile`: the one module that reads Inspect logs (`read_eval_log`);
- `importer`: an Inspect log of the static task into a medspot run folder
  (`medspot import-inspect`).

Only `rows`, `importer` and this module load without `inspect_ai`; `require_inspect()` is the
error that names the extra.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from medspot.errors import AdapterUnavailable

__all__ = ["EXTRA", "require_inspect"]

EXTRA = "inspect"


def require_inspect(what: str) -> ModuleType:
    """The `inspect_ai` package, or an `AdapterUnavailable` (exit 2) naming the extra."""
    try:
        return importlib.import_module("inspect_ai")
    except ImportError:
        raise AdapterUnavailable(
            f"{what} needs Inspect AI: pip install 'medspot[{EXTRA}]'"
        ) from None
