"""`medspot live image`: the environments' container images (docs/live/running.md "Containers").

live image build   build an environment family's image (all families without --env): a
                   Debian 12 base, the family's pinned packages, this medspot
live image list    the images built, and whether each holds this medspot
"""

from __future__ import annotations

import argparse
import sys

__all__ = ["register"]


def _echo(line: str) -> None:
    print(line, flush=True)


def _size(n: int) -> str:
    return f"{n / 1e9:.2f} GB" if n >= 1e9 else f"{n / 1e6:.0f} MB"


def _build(args: argparse.Namespace) -> int:
    from medspot.live.envs.registry import env_entry, env_names
    from medspot.live.images.build import build_image
    from medspot.live.images.engine import find_engine

    names = [env_entry(args.env).name] if args.env else env_names()
    engine = find_engine(args.engine)  # before anything is built
    _echo(f"{engine.name} {engine.version}: building {', '.join(names)}")
    for name in names:
        res = build_image(name, engine, base=args.base, unpinned=args.unpinned,
                          no_cache=args.no_cache, echo=_echo)  # fmt: skip
        img = res.image
        print(
            f"{img.ref}\n  id {img.id}\n  digest {img.digest or '-'}\n  {_size(img.size)}, "
            f"built in {res.seconds:.0f} s on {res.base}",
            flush=True,
        )
    return 0


def _list(args: argparse.Namespace) -> int:
    from medspot._version import __version__
    from medspot.live.images.engine import find_engine
    from medspot.live.images.names import LABEL, source_hash

    engine = find_engine(args.engine)
    here = source_hash()
    rows = []
    for image_id in engine.image_ids(f"{LABEL}.env"):
        for ref in engine.image_names(image_id) or [image_id]:
            info = engine.inspect_image(ref)
            if info is None or info.labels is None:
                continue
            lb = info.labels
            fits = lb.version == __version__ and lb.source == here
            state = "current" if fits else f"stale (medspot {lb.version}, source {lb.source})"
            versions = ", ".join(f"{p} {v}" for p, v in sorted(lb.packages.items()) if v)
            rows.append((ref, lb.env, state, _size(info.size), info.digest or info.id, versions))
    if not rows:
        print(f"{engine.name}: no medspot environment image (medspot live image build)",
              file=sys.stderr)  # fmt: skip
        return 0
    for ref, env, state, size, digest, versions in sorted(rows):
        print(f"{ref}\t{env}\t{state}\t{size}\t{digest}")
        if versions:
            print(f"  {versions}")
    return 0


def register(lsub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from medspot.live.images.engine import ENGINES
    from medspot.live.images.names import BASE_IMAGE

    p = lsub.add_parser(
        "image", help="build and list the environments' container images",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    isub = p.add_subparsers(dest="image_command", metavar="SUBCOMMAND", required=True)

    b = isub.add_parser("build", help="build an environment family's image")
    b.add_argument("--env", default=None, metavar="ENV", help="one family (default: all)")
    b.add_argument("--engine", choices=list(ENGINES), default=None,
                   help="podman or docker (default: podman if it answers)")  # fmt: skip
    b.add_argument(
        "--base", default=None, metavar="IMAGE",
        help=f"a Debian 12 image to build on (default {BASE_IMAGE}, made with debootstrap "
        "from this machine's apt mirror when missing; e.g. debian:bookworm-slim where a "
        "registry is reachable)",
    )  # fmt: skip
    b.add_argument(
        "--unpinned", action="store_true",
        help="install the versions apt offers instead of the validated ones (said in the "
        "image's labels and in run.json)",
    )  # fmt: skip
    b.add_argument(
        "--no-cache", action="store_true",
        help="build every layer again, the engine's cache unused (the base is kept)",
    )  # fmt: skip
    b.set_defaults(func=_build)

    ls = isub.add_parser("list", help="the images built, and whether each is current")
    ls.add_argument("--engine", choices=list(ENGINES), default=None,
                    help="podman or docker (default: podman if it answers)")  # fmt: skip
    ls.set_defaults(func=_list)
