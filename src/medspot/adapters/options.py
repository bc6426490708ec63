"""The options an adapter is built with, typed and validated once, where they enter (the CLI,
or a library caller's mapping): a misspelt option is an error, not silently ignored."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from medspot.errors import ConfigError
from medspot.limits import MAX_CONCURRENCY, check_number, check_whole

__all__ = ["BACKENDS", "PROMPT_STYLES", "AdapterOptions", "BackendName", "PromptStyleName"]

PromptStyleName = Literal["native", "upstream", "agent", "planner"]
BackendName = Literal["openai", "hf"]
PROMPT_STYLES: tuple[str, ...] = get_args(PromptStyleName)
BACKENDS: tuple[str, ...] = get_args(BackendName)


@dataclass(frozen=True)
class AdapterOptions:
    """Every option a factory or backend reads; None: the adapter's own default."""

    model: str | None = None
    prompt_style: PromptStyleName | None = None  # None: native
    concurrency: int | None = None
    # the backend and its server
    backend: BackendName | None = None
    base_urls: tuple[str, ...] = ()
    api_key: str | None = field(default=None, repr=False)  # a key given in code
    api_key_env: str | None = None  # the variable holding the key (`adapters.keys`)
    api_model: str | None = None
    timeout: float | None = None
    balance: str | None = None
    price_file: str | None = None
    server_extras: bool | None = None
    # in-process transformers
    checkpoint: str | None = None
    device: str | None = None
    dtype: str | None = None
    batch_size: int | None = None
    batch_wait: float | None = None
    # generic cards and baselines
    convention: str | None = None
    prompt_template: str | None = None
    replay_file: str | None = None
    ocr_min_score: float | None = None
    # the live computer-use agents (openai-computer-use, anthropic-computer-use)
    computer_tool: str | None = None  # the API's tool type / version; None: by the model
    acknowledge_safety_checks: bool | None = None  # None/False: a pending check ends the task

    def __post_init__(self) -> None:
        if self.prompt_style is not None and self.prompt_style not in PROMPT_STYLES:
            raise ConfigError(
                f"unknown prompt style {self.prompt_style!r} (choose {', '.join(PROMPT_STYLES)})"
            )
        if self.backend is not None and self.backend not in BACKENDS:
            raise ConfigError(f"unknown backend {self.backend!r} (choose {', '.join(BACKENDS)})")
        if self.timeout is not None:
            check_number("timeout", self.timeout, above=True)
        if self.concurrency is not None:
            check_whole("concurrency", self.concurrency, 1, MAX_CONCURRENCY)
        if isinstance(self.base_urls, str):
            object.__setattr__(self, "base_urls", (self.base_urls,))
        else:
            object.__setattr__(self, "base_urls", tuple(self.base_urls))

    @classmethod
    def from_mapping(cls, options: Mapping[str, Any] | AdapterOptions | None) -> AdapterOptions:
        """Options from a plain mapping (None values: unset). An unknown key is a ConfigError
        naming it; `base_url` is read as `base_urls`."""
        if isinstance(options, AdapterOptions):
            return options
        given = {k: v for k, v in (options or {}).items() if v is not None}
        if "base_url" in given:
            url = given.pop("base_url")
            given.setdefault("base_urls", url)
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(given) - known)
        if unknown:
            raise ConfigError(
                f"unknown adapter option(s): {', '.join(unknown)} "
                f"(known: {', '.join(sorted(known))})"
            )
        return cls(**given)

    def with_defaults(self, **values: Any) -> AdapterOptions:
        """These options with `values` filled in where unset (None, or no base URL)."""
        unset = {
            k: v
            for k, v in values.items()
            if getattr(self, k) is None or (k == "base_urls" and not self.base_urls)
        }
        return dataclasses.replace(self, **unset) if unset else self
