"""Adapter registry: short names to factories, heavy modules imported only when used.

A factory takes an `AdapterContext` and returns an `Adapter`. Entries name the module and
attribute of their factory so that `medspot models` lists everything without importing torch,
openai or OCR packages. A prefix entry (`openai:`) builds adapters for any name after the colon.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from medspot.adapters.base import Adapter, AdapterContext
from medspot.errors import AdapterUnavailable, ConfigError
from medspot.spelling import suggestion

__all__ = ["AdapterEntry", "available", "create", "entry", "register", "register_prefix"]

Factory = Callable[..., Adapter]


@dataclass(frozen=True)
class AdapterEntry:
    name: str
    target: str  # "module:attribute" of the factory; called as factory(ctx) or factory(ctx, name)
    convention: str
    summary: str
    kind: str = "model"  # "baseline", "model", "generic"
    extra: str | None = None  # the pip extra it needs, for error messages
    info: dict[str, Any] | None = None  # extra columns for `medspot models`


_ENTRIES: dict[str, AdapterEntry] = {}
_PREFIXES: dict[str, AdapterEntry] = {}


def register(entry: AdapterEntry) -> None:
    _ENTRIES[entry.name] = entry


def register_prefix(entry: AdapterEntry) -> None:
    """`entry.name` is the prefix without the colon (`openai` for `openai:NAME`)."""
    _PREFIXES[entry.name] = entry


def _load_builtin() -> None:
    # Modules that register entries on import; none of them imports a heavy package at the top.
    for mod in _BUILTIN_MODULES:
        importlib.import_module(mod)


_BUILTIN_MODULES: list[str] = [
    "medspot.adapters.baselines",
    "medspot.adapters.cards",
]
_loaded = False


def _ensure() -> None:
    global _loaded
    if not _loaded:
        _load_builtin()
        _loaded = True


def available() -> list[AdapterEntry]:
    _ensure()
    return sorted(
        [*_ENTRIES.values(), *_PREFIXES.values()], key=lambda e: (e.kind != "baseline", e.name)
    )


def entry(name: str) -> AdapterEntry:
    _ensure()
    if name in _ENTRIES:
        return _ENTRIES[name]
    prefix, sep, _ = name.partition(":")
    if sep and prefix in _PREFIXES:
        return _PREFIXES[prefix]
    known = ", ".join(sorted(_ENTRIES))
    raise ConfigError(
        f"unknown model {name!r}{suggestion(name, _ENTRIES)}; `medspot models` lists them "
        f"(known: {known})"
    )


def _import_target(e: AdapterEntry) -> Factory:
    module, _, attr = e.target.partition(":")
    try:
        mod = importlib.import_module(module)
    except ImportError as exc:
        hint = f" Install it with: pip install 'medspot[{e.extra}]'." if e.extra else ""
        raise AdapterUnavailable(f"model {e.name!r} needs {exc.name or exc}.{hint}") from None
    factory: Factory = getattr(mod, attr)
    return factory


def create(name: str, ctx: AdapterContext) -> Adapter:
    """Build the adapter registered as `name` (or matching a prefix such as `openai:`)."""
    e = entry(name)
    factory = _import_target(e)
    if name in _ENTRIES:
        return factory(ctx)
    return factory(ctx, name.partition(":")[2])
