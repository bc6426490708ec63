"""The official `anthropic` client (extra `[anthropic]`): imported only when used, and its
exceptions as medspot errors (the same mapping as the OpenAI backend's: transient errors are
retried by the caller, this module never loops)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from medspot.adapters.backends.openai import parse_retry_after
from medspot.errors import AdapterUnavailable, ModelCallError, TransientModelError

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
    final for any other 4xx (a bad request, a bad key)."""
    if isinstance(e, a.APITimeoutError):
        return TransientModelError(f"{url}: timed out after {timeout:g}s")
    if isinstance(e, a.APIConnectionError):
        return TransientModelError(f"{url}: connection error ({redact(str(e))})")
    if isinstance(e, a.APIStatusError):
        status = e.status_code
        msg = f"{url}: HTTP {status}: {redact(str(e.message))}"
        if status == 429 or status >= 500 or status in (408, 409):
            headers = {k.lower(): v for k, v in e.response.headers.items()}
            return TransientModelError(msg, retry_after=parse_retry_after(headers))
        return ModelCallError(msg)
    if isinstance(e, a.APIResponseValidationError):
        return TransientModelError(f"{url}: malformed response ({redact(str(e))})")
    return TransientModelError(f"{url}: {type(e).__name__}: {redact(str(e))}")
