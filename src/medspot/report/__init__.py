"""Reading run folders and turning them into reports, leaderboards, comparisons and plots.

`load` reads a run folder of the results layout (docs/results.md) into typed objects; `html`
writes the offline report site; `thumbs` makes screenshot thumbnails; `plots` draws figures
with matplotlib; `leaderboard` and `compare` make tables; `upstream_import` reads the MedSPOT
authors' result folders into a run folder.
"""

from __future__ import annotations

__all__: list[str] = []
