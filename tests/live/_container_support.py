"""Helpers of the container tests: a container engine required like the other live parts (a
skip, or a failure under MEDSPOT_REQUIRE_LIVE=1), the environment images built once and shared
(a test finds the image current and builds nothing; a build is only what a stale or missing one
needs: the layers are cached; the workers of one session take turns, so it is built once), and
the containers a run left, found by their owner label."""

from __future__ import annotations

import fcntl
import tempfile
import time
from pathlib import Path

from _orthanc_support import require_live

from medspot.errors import ConfigError
from medspot.live.images.engine import ContainerState, Engine, ImageInfo, find_engine
from medspot.live.images.names import CONTAINER_OWNER_LABEL

REPO = Path(__file__).resolve().parents[2]
# a test that may build an image (the base and the image from nothing: minutes) is given this
# long instead of the suite's 600 s
IMAGE_BUILD_TIMEOUT_S = 1500


def require_engine() -> Engine:
    try:
        return find_engine()
    except ConfigError as e:
        require_live(False, f"a container engine ({e})")
        raise


_CURRENT: dict[tuple[str, str], ImageInfo] = {}  # (engine, env): found current in this process


def ensure_image(engine: Engine, env: str) -> ImageInfo:
    """The current image of `env`, built when it is missing or stale: once per test session,
    whichever worker asks first (a lock of this machine; the others then find it current)."""
    from medspot.live.images.build import build_image, build_lock
    from medspot.live.images.check import require_image

    key = (engine.name, env)
    if key in _CURRENT:
        return _CURRENT[key]
    lock = Path(tempfile.gettempdir()) / f"medspot-test-image-{env}.lock"
    with lock.open("a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # a worker building it: wait, then find it current
        with build_lock():  # a build under way (CI starts one before the tests): its end
            pass
        try:
            _CURRENT[key] = require_image(engine, env)
        except ConfigError:
            try:
                _CURRENT[key] = build_image(env, engine, echo=print).image
            except ConfigError as e:
                require_live(False, f"the {env} image ({e})")
                raise
    return _CURRENT[key]


def owned_by(engine: Engine, pid: int) -> list[ContainerState]:
    """The live-run containers (running or not) whose owner is process `pid`."""
    return [c for c in engine.containers(CONTAINER_OWNER_LABEL)
            if c.labels.get(CONTAINER_OWNER_LABEL, "").split("/")[2:3] == [str(pid)]]  # fmt: skip


def wait_no_containers(engine: Engine, pid: int, timeout_s: float = 60.0) -> list[str]:
    """The names of `pid`'s containers still there after `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        left = owned_by(engine, pid)
        if not left or time.monotonic() > deadline:
            return [c.name for c in left]
        time.sleep(0.5)
