"""The one model-call retry loop: both runners (`medspot.runner`, the live `ModelAgent`) and
`medspot check-model`.

A `TransientModelError` (429, 5xx, a timeout, a bad body) is retried up to `max_retries` times:
after the server's `Retry-After` when it sent one (at most `retry_after_max` seconds), else
after an exponential backoff with jitter (`backoff_base * 2**retry`, at most `backoff_max`,
times a factor drawn from [0.5, 1)). Every other failure is final at once: a `ModelCallError`
keeps its message, an unexpected exception (an adapter bug) becomes one naming its type, never a
click; exceptions named in `passthrough` (the static runner's `DataError`: bad data, retrying
cannot help) and cancellation propagate unchanged.

The defaults are declared here once; the request objects and the command lines take theirs from
`MAX_RETRIES` and `RetryPolicy`.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from medspot.errors import ModelCallError, TransientModelError

__all__ = [
    "BACKOFF_BASE_S",
    "BACKOFF_MAX_S",
    "MAX_RETRIES",
    "RETRY_AFTER_MAX_S",
    "CallFailed",
    "RetryPolicy",
    "call_with_retries",
]

log = logging.getLogger(__name__)

T = TypeVar("T")

MAX_RETRIES = 4
BACKOFF_BASE_S = 0.5  # seconds; doubles each retry, with jitter
BACKOFF_MAX_S = 30.0
RETRY_AFTER_MAX_S = 120.0  # a server's Retry-After is honoured up to this


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = MAX_RETRIES
    backoff_base: float = BACKOFF_BASE_S
    backoff_max: float = BACKOFF_MAX_S
    retry_after_max: float = RETRY_AFTER_MAX_S

    def delay(self, retries: int, retry_after: float | None) -> float:
        """Seconds to wait before retry number `retries + 1` (`retries` already made)."""
        if retry_after is not None and retry_after >= 0:
            return min(retry_after, self.retry_after_max)
        base = min(self.backoff_max, self.backoff_base * (2**retries))
        return float(base * (0.5 + random.random() / 2))


class CallFailed(ModelCallError):
    """A model call failed for good; `retries` is how many retries were made before."""

    def __init__(self, message: str, retries: int) -> None:
        self.retries = retries
        super().__init__(message)


async def call_with_retries(
    call: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    *,
    label: str = "model call",
    passthrough: tuple[type[BaseException], ...] = (),
    on_retry: Callable[[int, float, TransientModelError], None] | None = None,
) -> tuple[T, int, float]:
    """`await call()` with the policy's retries: (its result, the retries made, the seconds
    from the first try to the answer). A final failure raises `CallFailed` (with the retries
    made); `passthrough` exceptions and cancellation propagate. `on_retry(retry_number, delay,
    error)` is told of each retry before its wait."""
    retries = 0
    t0 = time.perf_counter()
    while True:
        try:
            result = await call()
            return result, retries, time.perf_counter() - t0
        except TransientModelError as e:
            if retries >= policy.max_retries:
                raise CallFailed(f"{e} (after {retries} retries)", retries) from None
            delay = policy.delay(retries, e.retry_after)
            retries += 1
            log.info("%s: %s; retry %d in %.2fs", label, e, retries, delay)
            if on_retry is not None:
                on_retry(retries, delay, e)
            await asyncio.sleep(delay)
        except asyncio.CancelledError:
            raise
        except ModelCallError as e:
            raise CallFailed(str(e), retries) from None
        except Exception as e:
            if passthrough and isinstance(e, passthrough):
                raise
            log.debug("%s: the adapter raised", label, exc_info=True)  # a bug, not a click
            raise CallFailed(f"{type(e).__name__}: {e}", retries) from None
