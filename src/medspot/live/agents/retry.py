"""One model call with the normal retries: a `TransientModelError` (429 with its Retry-After,
5xx, timeouts, connection errors, malformed bodies) is retried with exponential backoff and
jitter, or after the server's Retry-After; any other `ModelCallError` is final; any other
exception a client raises is a failed call too (`ModelCallError`), never an answer.

Every live agent that calls a model goes through `call_with_retries` (the card agent, the
computer-use agents)."""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from medspot.errors import ModelCallError, TransientModelError

__all__ = ["RETRY_AFTER_MAX_S", "RetryPolicy", "call_with_retries"]

log = logging.getLogger(__name__)

T = TypeVar("T")
RETRY_AFTER_MAX_S = 120.0  # a server's Retry-After is honoured up to this many seconds


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 4
    backoff_base: float = 0.5  # seconds; doubles per retry, with jitter
    backoff_max: float = 30.0

    def delay(self, retries: int, retry_after: float | None) -> float:
        if retry_after is not None and retry_after >= 0:
            return min(retry_after, RETRY_AFTER_MAX_S)
        delay = min(self.backoff_max, self.backoff_base * 2**retries)
        return float(delay * (0.5 + random.random() / 2))


async def call_with_retries(fn: Callable[[], Awaitable[T]], policy: RetryPolicy) -> tuple[T, int]:
    """`fn()`'s result and the number of retries it took; `ModelCallError` after the last."""
    retries = 0
    while True:
        try:
            return await fn(), retries
        except TransientModelError as e:
            if retries >= policy.max_retries:
                raise ModelCallError(f"{e} (after {retries} retries)") from None
            await asyncio.sleep(policy.delay(retries, e.retry_after))
            retries += 1
        except ModelCallError:
            raise
        except asyncio.CancelledError:
            raise
        except Exception as e:  # a client bug is a failed call, never a click
            log.debug("model call raised", exc_info=True)
            raise ModelCallError(f"{type(e).__name__}: {e}") from None
