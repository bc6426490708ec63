"""MedSPOT-Live: closed-loop evaluation in real running clinical software.

An *environment* (one module per family: `orthanc`, `desktop`, `ohif`, `dicomscope`) runs a
real application, shows the model its screen, executes the model's action and reports whether
the application's state satisfies the task. The contract every environment implements is
`medspot.live.base.Environment`; actions are `medspot.live.core.actions`; tasks are data
(`medspot.live.core.tasks`).
"""

from __future__ import annotations

__all__: list[str] = []
