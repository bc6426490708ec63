"""Adapter options are validated once, where they enter: a misspelt option, an unknown backend
or prompt style is a ConfigError naming it; unset values fall back to the adapter's defaults."""

from __future__ import annotations

import pytest

from medspot.adapters.base import AdapterContext
from medspot.adapters.options import AdapterOptions
from medspot.errors import ConfigError


def test_a_misspelt_option_is_an_error() -> None:
    with pytest.raises(ConfigError, match=r"unknown adapter option.*base_ulrs"):
        AdapterContext.with_options({"base_ulrs": ["http://127.0.0.1:1"]})


@pytest.mark.parametrize(("key", "value"), [("backend", "tpu"), ("prompt_style", "fancy")])
def test_unknown_choices_are_errors(key: str, value: str) -> None:
    with pytest.raises(ConfigError, match=repr(value)):
        AdapterOptions.from_mapping({key: value})


def test_mapping_becomes_typed_options() -> None:
    ctx = AdapterContext.with_options({"base_url": "http://127.0.0.1:9/v1", "timeout": None})
    assert ctx.options.base_urls == ("http://127.0.0.1:9/v1",)
    assert ctx.options.timeout is None
    filled = ctx.options.with_defaults(model="center", base_urls=("http://other",))
    assert filled.model == "center" and filled.base_urls == ("http://127.0.0.1:9/v1",)
