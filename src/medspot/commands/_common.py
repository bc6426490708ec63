"""Options and helpers shared by the command modules."""

from __future__ import annotations

import argparse
from pathlib import Path

from medspot.errors import ConfigError

__all__ = ["add_data_args", "add_protocol_args", "parse_apps", "positive_int"]


def positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be 1 or more")
    return v


def non_negative_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not v >= 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be 0 or more")
    return v


def parse_apps(text: str | None) -> list[str] | None:
    if not text:
        return None
    apps = [a.strip() for a in text.split(",") if a.strip()]
    if not apps:
        raise ConfigError("--apps needs at least one application name")
    return apps


def add_data_args(p: argparse.ArgumentParser, *, required: bool = True) -> None:
    p.add_argument(
        "--data",
        required=required,
        metavar="DATA",
        help="dataset root (holding Annotations/ and Images/), a tree containing "
        "it, or a hub dataset (hf://Tajamul21/MedSPOT or Tajamul21/MedSPOT)",
    )
    p.add_argument("--apps", metavar="A,B", help="only these applications (comma separated)")
    p.add_argument("--limit", type=positive_int, metavar="N", help="first N tasks per app")


def add_protocol_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--protocol",
        default=None,
        metavar="P",
        help="scoring protocol: medspot-v1 (default) or a compatibility preset "
        "upstream-a ... upstream-e",
    )
    p.add_argument(
        "--tolerance",
        type=non_negative_float,
        default=None,
        metavar="PX",
        help="override the protocol's hit tolerance, in pixels of the original",
    )
    p.add_argument(
        "--bootstrap",
        type=positive_int,
        default=2000,
        metavar="N",
        help="bootstrap resamples for the 95%% intervals (default 2000)",
    )


def out_dir(value: str | None, model: str) -> Path:
    if value:
        return Path(value)
    safe = model.replace("/", "_").replace(":", "_")
    return Path("results") / safe
