"""`medspot live setup` and `medspot live doctor`: the host's side of the environments (their
system packages, what their own hooks fetch and find missing; a Ray node's resources)."""

from __future__ import annotations

import argparse
import sys

from medspot.commands.live._common import env_args, envs

__all__ = ["register"]


def _setup(args: argparse.Namespace) -> int:
    from medspot.live.envs.registry import env_entry
    from medspot.live.services.host import (
        apt_commands,
        can_install,
        install_packages,
        run_setup_hooks,
    )

    entries = [env_entry(n) for n in envs(args.env)]
    cmds = apt_commands(entries)
    if cmds and (args.print_only or not can_install()):
        print("Run as root:\n" + "\n".join("  " + " ".join(c) for c in cmds))
    elif cmds:
        install_packages(cmds, echo=lambda line: print(line, flush=True))
    if not args.print_only:  # an environment may fetch more (a pinned npm package, say)
        for name, what in run_setup_hooks(entries):
            print(f"{name}: {what}")
    return 0


def _ray_resources(names: list[str]) -> int:
    """The `ray start --resources` JSON of this node: the environments it has everything for
    (stdout, one line); what keeps the others out goes to stderr."""
    import json

    from medspot.live.envs.registry import env_entry
    from medspot.live.loop.executors.placement import node_resources
    from medspot.live.services.host import missing_for

    ready = []
    for n in names:
        problems = missing_for(env_entry(n))
        if problems:
            print(f"{n}: not declared (missing: {'; '.join(problems)})", file=sys.stderr)
        else:
            ready.append(n)
    print(json.dumps(node_resources(ready)))
    return 0


def _doctor(args: argparse.Namespace) -> int:
    import os

    from medspot._version import __version__
    from medspot.live.envs.registry import env_entry
    from medspot.live.services.host import installed_versions, missing_for

    if args.ray_resources:
        return _ray_resources(envs(args.env))
    if os.environ.get("MEDSPOT_IN_IMAGE") == "1":
        print(f"medspot {__version__} in an environment image", file=sys.stderr)
    missing_any = False
    for n in envs(args.env):
        entry = env_entry(n)
        problems = missing_for(entry)
        found = installed_versions(entry)
        versions = ", ".join(f"{p} {v}" for p, v in found.items())
        if problems:
            missing_any = True
            print(f"{n}: MISSING\n" + "\n".join(f"  - {p}" for p in problems))
        else:
            print(f"{n}: ok")
        if versions:  # the application versions found (here, or inside an image)
            print(f"  versions: {versions}")
    if missing_any:
        print("`medspot live setup` installs the system packages (as root).", file=sys.stderr)
    return 1 if missing_any else 0


def register(lsub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    s = lsub.add_parser("setup", help="install the environments' system packages")
    env_args(s, required=False)
    s.add_argument("--print", dest="print_only", action="store_true",
                   help="only print the commands")  # fmt: skip
    s.set_defaults(func=_setup)

    d = lsub.add_parser("doctor", help="what an environment is missing (exit 1 if anything)")
    env_args(d, required=False)
    d.add_argument(
        "--ray-resources", action="store_true",
        help="print this node's `ray start --resources` JSON: one resource per environment "
        "it has everything for",
    )  # fmt: skip
    d.set_defaults(func=_doctor)
