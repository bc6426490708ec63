"""Print the AT-SPI accessible tree of the desktop's applications as JSON (one document).

Run with Debian's system Python (`/usr/bin/python3`, which has `pyatspi`), NOT the project's
interpreter: `medspot.live.drivers.atspi` runs it as a subprocess with the environment's DISPLAY and
DBUS_SESSION_BUS_ADDRESS and parses its output. It imports nothing from medspot.

Usage: python3 atspi_dump.py [APP_NAME_SUBSTRING] [--showing]
(--showing: do not descend into widgets that are not showing: hidden tabs, closed menus.)
       python3 atspi_dump.py --serve
(reads one JSON request a line, {"app": "...", "showing": bool, "skip_tabs": [names]}: the
insides of hidden page tabs with those names are left out; answers one JSON line each:
saves the interpreter and pyatspi start-up on every dump.)

Output: {"nodes": [{"path": "0/3/1", "parent": int|-1, "role": str, "name": str,
"description": str, "states": [str], "box": [x, y, w, h] (screen), "text": str|null,
"value": float|null, "app": str}, ...]} in tree order (pre-order). Errors go to stderr with
exit status 1.
"""

from __future__ import annotations

import json
import sys
from typing import Any

MAX_NODES = 5000
MAX_TEXT = 2000
TEXT_ROLES = {"text", "password text", "paragraph", "entry", "terminal", "document text"}
VALUE_ROLES = {"slider", "spin button", "scroll bar", "progress bar"}


def _text(acc: Any) -> str | None:
    try:
        t = acc.queryText()
    except Exception:
        return None
    try:
        n = min(t.characterCount, MAX_TEXT)
        return str(t.getText(0, n))
    except Exception:
        return None


def _value(acc: Any) -> float | None:
    try:
        return float(acc.queryValue().currentValue)
    except Exception:
        return None


def _box(acc: Any, pyatspi: Any) -> list[int]:
    try:
        e = acc.queryComponent().getExtents(pyatspi.DESKTOP_COORDS)
        return [int(e.x), int(e.y), int(e.width), int(e.height)]
    except Exception:
        return [0, 0, 0, 0]


def _states(acc: Any, pyatspi: Any) -> list[str]:
    try:
        ss = acc.getState().getStates()
    except Exception:
        return []
    out: list[str] = []
    for s in ss:
        name = pyatspi.stateToString(s) if hasattr(pyatspi, "stateToString") else str(s)
        out.append(str(name).replace("STATE_", "").lower().replace(" ", "-"))
    return out


def dump(
    pyatspi: Any, want: str, showing_only: bool, skip_tabs: frozenset[str] = frozenset()
) -> dict[str, Any]:
    desktop = pyatspi.Registry.getDesktop(0)
    nodes: list[dict[str, Any]] = []

    def walk(acc: Any, path: str, parent: int, app: str) -> None:
        if acc is None or len(nodes) >= MAX_NODES:
            return
        idx = len(nodes)
        try:
            role = acc.getRoleName()
            name = acc.name or ""
            desc = acc.description or ""
            count = acc.childCount
        except Exception:
            return
        states = _states(acc, pyatspi)
        nodes.append(
            {
                "path": path,
                "parent": parent,
                "role": role,
                "name": name,
                "description": desc,
                "states": states,
                "box": _box(acc, pyatspi),
                "text": _text(acc) if role in TEXT_ROLES else None,
                "value": _value(acc) if role in VALUE_ROLES else None,
                "app": app,
            }
        )
        if showing_only and "showing" not in states:
            return
        # a page tab's header shows while its insides do not: a tab is hidden unless selected
        if role == "page tab" and name.strip() in skip_tabs and "selected" not in states:
            return
        for i in range(count):
            try:
                child = acc.getChildAtIndex(i)
            except Exception:
                continue
            walk(child, f"{path}/{i}", idx, app)

    for i in range(desktop.childCount):
        try:
            app = desktop.getChildAtIndex(i)
            app_name = app.name or ""
        except Exception:
            continue
        if want and want not in app_name.lower():
            continue
        for k in range(app.childCount):
            try:
                walk(app.getChildAtIndex(k), f"{i}/{k}", -1, app_name)
            except Exception:
                continue
    return {"nodes": nodes}


def main(argv: list[str]) -> int:
    import pyatspi

    if "--serve" in argv[1:]:
        for line in sys.stdin:
            try:
                req = json.loads(line)
                skip = frozenset(str(t) for t in req.get("skip_tabs") or ())
                doc = dump(pyatspi, str(req.get("app", "")).lower(), bool(req.get("showing")), skip)
            except Exception as exc:
                doc = {"error": f"{type(exc).__name__}: {exc}"}
            sys.stdout.write(json.dumps(doc) + "\n")
            sys.stdout.flush()
        return 0
    args = [a for a in argv[1:] if not a.startswith("--")]
    doc = dump(pyatspi, args[0].lower() if args else "", "--showing" in argv[1:])
    json.dump(doc, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except Exception as exc:
        sys.stderr.write(f"atspi_dump: {type(exc).__name__}: {exc}\n")
        sys.exit(1)
