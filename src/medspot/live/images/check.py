"""Whether an environment image fits the medspot that runs: it exists, medspot built it for
that environment, and it holds this very medspot (its version and its source hash: the worker
inside unpickles what this process sends). Each refusal is a `ConfigError` (exit 2) naming the
command that fixes it, raised before a run writes anything."""

from __future__ import annotations

from medspot._version import __version__
from medspot.errors import ConfigError
from medspot.live.images.engine import Engine, ImageInfo
from medspot.live.images.names import image_ref, source_hash

__all__ = ["build_command", "require_image"]


def build_command(env: str, engine: Engine | None = None) -> str:
    """The command that builds `env`'s image (with the engine, where it is not the default)."""
    flag = f" --engine {engine.name}" if engine is not None and engine.name != "podman" else ""
    return f"medspot live image build --env {env}{flag}"


def require_image(engine: Engine, env: str, image: str | None = None) -> ImageInfo:
    """The image environment `env` runs in (`image`, default `names.image_ref(env)`)."""
    ref = image or image_ref(env)
    fix = build_command(env, engine)
    info = engine.inspect_image(ref)
    if info is None:
        hint = f"build it with `{fix}`" if image is None else "build or pull it first"
        raise ConfigError(f"{engine.name} has no image {ref} for {env}: {hint}")
    labels = info.labels
    if labels is None:
        raise ConfigError(
            f"{ref} is not a medspot environment image (it has no org.medspot labels): "
            f"build one with `{fix}`"
        )
    if labels.env != env:
        raise ConfigError(
            f"{ref} is the image of {labels.env}, not of {env}: build it with `{fix}`"
        )
    here = source_hash()
    if labels.version != __version__ or labels.source != here:
        raise ConfigError(
            f"{ref} is stale: it holds medspot {labels.version} (source {labels.source}), this "
            f"is medspot {__version__} (source {here}); rebuild it with `{fix}`"
        )
    return info
