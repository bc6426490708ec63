"""The official `anthropic` client (extra `[anthropic]`): imported only when used, and its
exceptions as medspot errors (the same mapping as the OpenAI backend's: transient errors are
retried by the caller, this module never loops)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from medspot.adapters.backends.openai import map_openai_error
from medspot.errors import AdapterUnavailable, ModelCallError

__all__ = ["ANTHROPIC_URL", "import_anthropic", "map_anthropic_error"]

ANTHROPIC_URL = "https://api.anthropic.com"


def import_anthropic(what: str) -> Any:
    """The `anthropic` module, or `AdapterUnavailable` naming the extra."""
    try:
        import anthropic
    except ImportError:
        raise AdapterUnavailable(
            f"{what} needs the anthropic package: pip install 'medspot[anthropic]'"
        ) from None
    return anthropic


def map_anthropic_error(
    a: Any, e: Exception, url: str, timeout: float, redact: Callable[[str], str]
) -> ModelCallError:
    """An exception of the `anthropic` client (module `a`): transient for timeouts, connection
    errors, 408/409/429 (with Retry-After), 5xx and 529 (overloaded), malformed responses;
    final for any other 4xx (a bad request, a bad key). Both vendors' clients have the same
    error classes (`APITimeoutError`, `APIConnectionError`, `APIStatusError`, ...), so the
    OpenAI backend's mapping is the one rule."""
    return map_openai_error(a, e, url, timeout, redact)
