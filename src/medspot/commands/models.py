"""`medspot models`: the available adapters and their coordinate conventions."""

from __future__ import annotations

import argparse
import json

from medspot.adapters import registry

__all__ = ["register"]


def _live_agents() -> list[dict[str, str]]:
    """The agents of `medspot live run` that are not models of the benchmark (the cards
    above run there too)."""
    from medspot.live.agents.factory import LIVE_AGENT_SUMMARIES

    return [
        {"name": name, "kind": "live-agent", "modes": "agent" if modes == "agent" else
         "guided,agent", "summary": summary}
        for name, (modes, summary) in LIVE_AGENT_SUMMARIES.items()
    ]  # fmt: skip


def _run(args: argparse.Namespace) -> int:
    entries = registry.available()
    if args.json:
        print(
            json.dumps(
                [
                    {
                        "name": e.name + (":NAME" if e.kind == "generic" else ""),
                        "kind": e.kind,
                        "convention": e.convention,
                        "extra": e.extra,
                        "summary": e.summary,
                        **(e.info or {}),
                    }
                    for e in entries
                ]
                + _live_agents(),
                indent=2,
            )
        )
        return 0
    head = ("name", "kind", "convention", "backends", "upstream", "checkpoint / what it does")
    rows = []
    for e in entries:
        info = e.info or {}
        name = e.name + (":NAME" if e.kind == "generic" else "")
        backends = str(info.get("backends", "local" if e.kind == "baseline" else "openai"))
        desc = str(info.get("checkpoint") or e.summary)
        rows.append(
            (name, e.kind, e.convention, backends, str(info.get("upstream_preset", "-")), desc)
        )
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(5)]
    for r in [head, *rows]:
        print("  ".join(c.ljust(w) for c, w in zip(r[:5], widths, strict=True)) + "  " + r[5])
    print(
        "\nConventions: rel1000/rel999 = integer grid over the image, rel1 = fractions, "
        "abs_resized = pixels of the image the harness resized and sent, pointer = points "
        "from a pointer head. `medspot models --json` gives every field."
    )
    live = _live_agents()
    print("\nLive agents (`medspot live run --model NAME`, beside the models above):")
    width = max(len(a["name"]) for a in live)
    for a in live:
        modes = "--mode agent only" if a["modes"] == "agent" else "guided or agent"
        print(f"{a['name'].ljust(width)}  {modes.ljust(17)}  {a['summary']}")
    print(
        "and any model above as a planner with a grounding card: --planner MODEL --grounder "
        "CARD (--mode agent; docs/live/agents.md)"
    )
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("models", help="list the available models and baselines")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_run)
