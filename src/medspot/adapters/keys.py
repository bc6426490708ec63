"""Which API key a served model gets, read from which environment variable: the one rule of
every backend and agent that sends a key (`eval`, `check-model`, the guided cards of `live
run`, the planner and the grounder, both computer-use agents).

- A key given in code (`AdapterOptions.api_key`, a library caller's) is sent as it is.
- A variable named with `--api-key-env VAR` (`AdapterOptions.api_key_env`) is the only place
  the key is read from: unset or empty, it is an error naming it (exit 2, before anything
  starts); nothing else is ever tried.
- Without either, the API's own variable (`$OPENAI_API_KEY`, `$ANTHROPIC_API_KEY`) is read,
  for the official endpoint and for a custom `--base-url` alike (name another variable, or an
  empty one, to keep that key from a custom server). When it is unset, the official endpoint
  is refused and a custom server gets a placeholder (local servers accept any key).

The variable used is recorded in run.json (`adapter.api_key_env`); the key never is.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from medspot.adapters.options import AdapterOptions
from medspot.errors import AdapterUnavailable, ConfigError

__all__ = [
    "ANTHROPIC_KEY_ENV",
    "GIVEN",
    "OPENAI_KEY_ENV",
    "PLACEHOLDER",
    "ApiKey",
    "api_key",
    "named_key",
]

OPENAI_KEY_ENV = "OPENAI_API_KEY"
ANTHROPIC_KEY_ENV = "ANTHROPIC_API_KEY"
PLACEHOLDER = "EMPTY"  # what a custom server gets when no key is set anywhere
GIVEN = "(given in code)"  # `ApiKey.source` of a key passed as `AdapterOptions.api_key`


@dataclass(frozen=True)
class ApiKey:
    """The key to send, and where it came from: the variable's name, `GIVEN`, or None for
    the placeholder (no key was set)."""

    value: str = field(repr=False)
    source: str | None

    def describe(self) -> dict[str, str | None]:
        """What run.json records: the variable (never the key)."""
        return {"api_key_env": self.source}


def named_key(var: str) -> str:
    """The value of the variable `--api-key-env` names, or a `ConfigError` naming it."""
    if not var or not var.strip():
        raise ConfigError("--api-key-env needs the name of an environment variable")
    value = os.environ.get(var)
    if value is None:
        raise ConfigError(
            f"--api-key-env {var}: the variable {var} is not set (the API key is read from it, "
            "and from nowhere else); set it, or leave --api-key-env out"
        )
    if not value.strip():
        raise ConfigError(f"--api-key-env {var}: the variable {var} is empty")
    return value


def api_key(options: AdapterOptions, *, default_env: str, needed_by: str | None) -> ApiKey:
    """The key for a client of an API whose own variable is `default_env`. `needed_by` names
    what needs a real key (the official endpoint): without one it is refused
    (`AdapterUnavailable`); None: a custom server, which then gets `PLACEHOLDER`."""
    if options.api_key and options.api_key_env:
        raise ConfigError("give an API key or the variable holding it (api_key_env), not both")
    if options.api_key:
        return ApiKey(options.api_key, GIVEN)
    if options.api_key_env:
        return ApiKey(named_key(options.api_key_env), options.api_key_env)
    value = os.environ.get(default_env)
    if value and value.strip():
        return ApiKey(value, default_env)
    if needed_by is not None:
        raise AdapterUnavailable(
            f"{needed_by} needs a key: set {default_env} (or name another variable with "
            "--api-key-env)"
        )
    return ApiKey(PLACEHOLDER, None)
