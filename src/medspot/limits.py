"""The bounds of the numeric options, declared once: the command lines' argument types
(`commands._common`) and the request objects of the library (`pipeline.EvalRequest`,
`live.loop.request.LiveRequest`) check against these, before anything starts or is written.

A value outside its bound would fail only later, or never end: a negative seed fails numpy's
bootstrap after the whole run, a billion calls in flight hang while their connection pools are
built, a billion bootstrap resamples run out of memory after the run, a billion retries compute
a backoff of 2**1e9 seconds, a million repeats build results for runs that never happen.
"""

from __future__ import annotations

import math

from medspot.errors import ConfigError

__all__ = [
    "MAX_BOOTSTRAP",
    "MAX_CONCURRENCY",
    "MAX_IDLE_TIMEOUT_S",
    "MAX_PORT",
    "MAX_REPEATS",
    "MAX_RETRIES_LIMIT",
    "MAX_SEED",
    "MAX_SPARES",
    "MAX_ZOOM_PASSES",
    "MIN_IDLE_TIMEOUT_S",
    "check_number",
    "check_seed",
    "check_whole",
]

# A seed is a whole number 0 .. 2**32 - 1: what numpy's generators, Python's `random` and the
# model servers' `seed` parameters all take (the live runner sends seed + repeat).
MAX_SEED = 2**32 - 1
MAX_CONCURRENCY = 1024  # model calls in flight / environments side by side
MAX_BOOTSTRAP = 100_000  # bootstrap resamples of an interval
MAX_REPEATS = 100  # `live run --repeats K`: runs of each task
MAX_SPARES = 8  # `live run --spares N`: spare instances per slot (each a whole application)
MAX_RETRIES_LIMIT = 100  # `--max-retries`, `--env-retries`
MAX_ZOOM_PASSES = 10  # `eval --zoom K` (a window halves each pass: 10 passes is 1/512 of it)
MAX_PORT = 65535  # `live serve --port N`: a TCP port (0: any free one)
# `live serve --idle-timeout S`: a served client silent this long has left (0: never); the
# server looks every S/4 seconds (at most 5), so a timeout under a second would poll the clock
# in a loop, and one over a week would keep an environment for a client long gone
MIN_IDLE_TIMEOUT_S = 1.0
MAX_IDLE_TIMEOUT_S = 7 * 24 * 3600.0


def check_whole(name: str, value: object, least: int, most: int | None = None) -> int:
    """`value` as a whole number from `least` to `most` (None: no upper bound), or a
    `ConfigError` naming the option `name` and the bound."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{name} {value!r}: expected a whole number")
    if value < least or (most is not None and value > most):
        what = f"from {least} to {most}" if most is not None else f"{least} or more"
        raise ConfigError(f"{name} {value}: must be {what}")
    return value


def check_number(name: str, value: object, *, least: float = 0.0, above: bool = False) -> float:
    """`value` as a finite number >= `least` (> `least` when `above`), or a `ConfigError`
    naming the option (`--timeout 0` is refused, not read as "the default")."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{name} {value!r}: expected a number")
    v = float(value)
    if not math.isfinite(v):
        raise ConfigError(f"{name} {value}: must be a finite number")
    if v < least or (above and v == least):
        raise ConfigError(f"{name} {value}: must be {'more than' if above else 'at least'} "
                          f"{least:g}")  # fmt: skip
    return v


def check_seed(value: object, name: str = "--seed") -> int:
    """A seed (0 .. `MAX_SEED`), or a `ConfigError` naming `name`."""
    return check_whole(name, value, 0, MAX_SEED)
