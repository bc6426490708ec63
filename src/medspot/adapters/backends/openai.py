"""The OpenAI-compatible backend (extra `[api]`): OpenAI itself, vLLM, SGLang, any server that
speaks Chat Completions or Responses.

One `AsyncOpenAI` client per base URL, built with `max_retries=0` and the per-request timeout;
requests go to the replica with the fewest requests in flight (round robin among ties, or
strict round robin). Failures become `TransientModelError` (429 with its Retry-After, 5xx,
timeouts, connection errors, malformed bodies) or `ModelCallError` (other 4xx); the runner
retries, this module never loops. The API key is never logged, described or recorded.

Options: `base_urls` / `base_url` (default `$OPENAI_BASE_URL`, else OpenAI), `api_key` /
`api_key_env` (the key's source: `medspot.adapters.keys`), `api_model` (default the card's
checkpoint), `timeout` (seconds, default 120), `concurrency` (default 16), `balance`
("least" or "round_robin"), `price_file`, `server_extras` (send vLLM's `skip_special_tokens`,
`seed` and assistant-continuation fields; default: on for any server but api.openai.com).
"""

from __future__ import annotations

import email.utils
import logging
import os
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from medspot.adapters.backends.cardbase import (
    CardAdapter,
    Generation,
    SentImage,
    data_url_image,
)
from medspot.adapters.backends.imageprep import ImagePrep
from medspot.adapters.backends.openai_bodies import (
    Reply,
    chat_body,
    read_chat,
    read_responses,
    responses_body,
)
from medspot.adapters.backends.pricing import CostMeter, PriceTable, load_price_table
from medspot.adapters.base import StepRequest, Usage
from medspot.adapters.card import ModelCard, PromptSpec, PromptStyle
from medspot.adapters.keys import GIVEN, OPENAI_KEY_ENV, ApiKey, api_key
from medspot.adapters.options import AdapterOptions
from medspot.errors import AdapterUnavailable, ConfigError, ModelCallError, TransientModelError

__all__ = [
    "OPENAI_URL",
    "OpenAIAdapter",
    "check_base_url",
    "map_openai_error",
    "parse_retry_after",
    "redact_secrets",
    "sanitize_url",
]

log = logging.getLogger(__name__)

OPENAI_URL = "https://api.openai.com/v1"
DEFAULT_TIMEOUT = 120.0
DEFAULT_CONCURRENCY = 16
_POOL_SIZE = 8  # requests in flight per connection pool
_KEYLIKE = re.compile(r"sk-[A-Za-z0-9_\-*.]{4,}")


def sanitize_url(url: str) -> str:
    """The URL without credentials, query or fragment (safe to record)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def parse_retry_after(headers: Mapping[str, str] | None, now: float | None = None) -> float | None:
    """Seconds to wait from `retry-after-ms`, or `Retry-After` in seconds or an HTTP date."""
    if not headers:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def redact_secrets(text: str, secrets: tuple[str, ...]) -> str:
    """`text` without the given secrets and anything shaped like an API key."""
    for secret in secrets:
        if secret and secret != "EMPTY":
            text = text.replace(secret, "***")
    return _KEYLIKE.sub("sk-***", text)


def map_openai_error(
    o: Any, e: Exception, url: str, timeout: float, redact: Callable[[str], str]
) -> ModelCallError:
    """An exception of the `openai` client (module `o`) as a medspot error: transient (worth
    retrying: a timeout, a connection error, 408/409/429 with its Retry-After, 5xx, a malformed
    response) or final (any other 4xx). `url` is the sanitised server URL."""
    if isinstance(e, o.APITimeoutError):
        return TransientModelError(f"{url}: timed out after {timeout:g}s")
    if isinstance(e, o.APIConnectionError):
        return TransientModelError(f"{url}: connection error ({redact(str(e))})")
    if isinstance(e, o.APIStatusError):
        status = e.status_code
        msg = f"{url}: HTTP {status}: {redact(e.message)}"
        if status == 429 or status >= 500 or status in (408, 409):
            headers = {k.lower(): v for k, v in e.response.headers.items()}
            return TransientModelError(msg, retry_after=parse_retry_after(headers))
        return ModelCallError(msg)
    if isinstance(e, o.APIResponseValidationError):
        return TransientModelError(f"{url}: malformed response ({redact(str(e))})")
    return TransientModelError(f"{url}: {type(e).__name__}: {redact(str(e))}")


def _httpx_module(openai: Any) -> Any:
    """The httpx package the openai client is built on (httpx, or httpx2 in newer releases)."""
    import importlib

    base = openai.DefaultAsyncHttpxClient.__mro__[1].__module__.partition(".")[0]
    return importlib.import_module(base)


@dataclass
class _Endpoint:
    url: str  # sanitised, for records
    clients: tuple[Any, ...]  # openai.AsyncOpenAI, each with its own small connection pool
    in_flight: int = 0
    calls: int = 0

    def next_client(self) -> Any:
        return self.clients[self.calls % len(self.clients)]


def check_base_url(url: str) -> None:
    """An http(s) URL with a host, or a `ConfigError` before any call (not retries per step)."""
    try:
        parts = urlsplit(url)
        ok = parts.scheme in ("http", "https") and bool(parts.hostname)
        _ = parts.port  # a port that is not a number raises
    except ValueError:
        ok = False
    if not ok:
        raise ConfigError(
            f"--base-url {sanitize_url(url)!r} is not an http(s) URL "
            "(like http://127.0.0.1:8000/v1)"
        )


class OpenAIAdapter(CardAdapter):
    """A model card asked through an OpenAI-compatible server."""

    backend = "openai"

    def __init__(
        self,
        card: ModelCard,
        style: PromptStyle,
        *,
        model: str,
        base_urls: list[str],
        api_key: ApiKey | str,
        timeout: float = DEFAULT_TIMEOUT,
        concurrency: int = DEFAULT_CONCURRENCY,
        balance: str = "least",
        prices: PriceTable | None = None,
        server_extras: bool | None = None,
    ) -> None:
        try:
            import openai
        except ImportError:
            raise AdapterUnavailable(
                "the OpenAI-compatible backend needs the openai package: pip install 'medspot[api]'"
            ) from None
        if balance not in ("least", "round_robin"):
            raise ConfigError(f"unknown balance {balance!r}; use least or round_robin")
        if not base_urls:
            raise ConfigError("no base URL")
        for url in base_urls:
            check_base_url(url)
        super().__init__(card, style, card.checkpoint)
        self.max_concurrency = max(1, int(concurrency))
        self.model = model
        self.timeout = float(timeout)
        self.balance = balance
        self.prices = prices or PriceTable()
        self.cost_meter = CostMeter()
        self.images = ImagePrep()
        official = any(urlsplit(u).hostname == "api.openai.com" for u in base_urls)
        self.server_extras = (not official) if server_extras is None else server_extras
        if isinstance(api_key, str):
            api_key = ApiKey(api_key, GIVEN)
        self.key_source = api_key.source
        self._secrets = (api_key.value,) if api_key.value else ()
        self._rr = 0
        self._openai = openai
        from openai.types.chat import ChatCompletion

        self._chat_completion = ChatCompletion
        httpx = _httpx_module(openai)
        self._endpoints: list[_Endpoint] = []
        # Several small connection pools per server rather than one large one: httpcore scans
        # every pooled connection on each request, a cost that grows with the pool
        # (benchmarks/README.md, harness cost per step).
        n_pools = max(1, -(-self.max_concurrency // _POOL_SIZE))
        per_pool = -(-self.max_concurrency // n_pools) + 2
        for url in base_urls:
            clients = []
            for _ in range(n_pools):
                http = openai.DefaultAsyncHttpxClient(
                    timeout=self.timeout,
                    limits=httpx.Limits(
                        max_connections=per_pool, max_keepalive_connections=per_pool
                    ),
                )
                clients.append(
                    openai.AsyncOpenAI(
                        api_key=api_key.value,
                        base_url=url,
                        timeout=self.timeout,
                        max_retries=0,
                        http_client=http,
                    )
                )
            self._endpoints.append(_Endpoint(sanitize_url(url), tuple(clients)))

    @classmethod
    def from_options(
        cls, card: ModelCard, style: PromptStyle, options: AdapterOptions | Mapping[str, Any]
    ) -> OpenAIAdapter:
        options = AdapterOptions.from_mapping(options)
        urls = [str(u).rstrip("/") for u in options.base_urls if str(u).strip()]
        if not urls:
            urls = [os.environ.get("OPENAI_BASE_URL") or OPENAI_URL]
        official = any(urlsplit(u).hostname == "api.openai.com" for u in urls)
        key = api_key(
            options, default_env=OPENAI_KEY_ENV,
            needed_by=f"model {card.name!r} on the OpenAI API" if official else None,
        )  # fmt: skip
        timeout = options.timeout
        return cls(
            card,
            style,
            model=str(options.api_model or card.checkpoint),
            base_urls=urls,
            api_key=key,
            timeout=float(timeout) if timeout else DEFAULT_TIMEOUT,
            concurrency=int(options.concurrency or DEFAULT_CONCURRENCY),
            balance=str(options.balance or "least"),
            prices=load_price_table(options.price_file),
            server_extras=options.server_extras,
        )

    # -- generation -------------------------------------------------------------------------
    async def _prepare(self, request: StepRequest, spec: PromptSpec) -> SentImage:
        return await data_url_image(self.images, request, spec)

    async def _generate(
        self, spec: PromptSpec, image: SentImage, temperature: float | None, seed: int
    ) -> Generation:
        reply = await self._call(spec, str(image.payload), temperature, seed)
        return Generation(reply.text, reply.usage, reply.flags, reply.meta)

    def _cost(self, usage: Usage | None) -> float | None:
        cost = self.prices.cost(self.model, usage)
        self.cost_meter.add(usage, cost)
        return cost

    def _describe_backend(self) -> dict[str, Any]:
        price = self.prices.get(self.model)
        return {
            "api_model": self.model,
            "base_urls": [e.url for e in self._endpoints],
            "timeout_s": self.timeout,
            "max_concurrency": self.max_concurrency,
            "balance": self.balance,
            "server_extras": self.server_extras,
            "price_per_1m": [price.input_per_m, price.output_per_m] if price else None,
            "api_key_env": self.key_source,
        }

    async def aclose(self) -> None:
        for e in self._endpoints:
            for c in e.clients:
                await c.close()

    # -- internals --------------------------------------------------------------------------
    def _pick(self) -> _Endpoint:
        n = len(self._endpoints)
        start = self._rr
        self._rr = (self._rr + 1) % n
        if self.balance == "round_robin" or n == 1:
            return self._endpoints[start]
        order = [(start + i) % n for i in range(n)]
        return self._endpoints[min(order, key=lambda i: self._endpoints[i].in_flight)]

    def _redact(self, text: str) -> str:
        return redact_secrets(text, self._secrets)

    async def _call(
        self, spec: PromptSpec, url: str, temperature: float | None, seed: int
    ) -> Reply:
        ep = self._pick()
        client = ep.next_client()
        ep.in_flight += 1
        ep.calls += 1
        try:
            if spec.api == "responses":
                return await self._responses(ep, client, spec, url, temperature)
            if spec.api != "chat":
                raise ConfigError(f"unknown API {spec.api!r} in the card (chat or responses)")
            return await self._chat(ep, client, spec, url, temperature, seed)
        except self._openai.OpenAIError as e:
            raise self._map_error(e, ep) from None
        except ValueError as e:  # a 200 whose body is not JSON
            raise TransientModelError(f"{ep.url}: malformed response body ({e})") from None
        finally:
            ep.in_flight -= 1

    def _map_error(self, e: Exception, ep: _Endpoint) -> ModelCallError:
        return map_openai_error(self._openai, e, ep.url, self.timeout, self._redact)

    async def _chat(
        self,
        ep: _Endpoint,
        client: Any,
        spec: PromptSpec,
        url: str,
        temperature: float | None,
        seed: int,
    ) -> Reply:
        built = chat_body(
            spec,
            model=self.model,
            url=url,
            temperature=temperature,
            seed=seed,
            server_extras=self.server_extras,
        )
        # The prepared body is posted as it is: the SDK's request transform walks every
        # message (and the image's base64 text) again per call, which was ~20% of the
        # harness's CPU per step (benchmarks/README.md, harness cost); the response is still
        # parsed into the SDK's model, and errors still arrive as the SDK's exceptions.
        resp = await client.post(
            "/chat/completions", body=built.body, cast_to=self._chat_completion
        )
        return read_chat(resp, ep.url, built.flags)

    async def _responses(
        self, ep: _Endpoint, client: Any, spec: PromptSpec, url: str, temperature: float | None
    ) -> Reply:
        body = responses_body(spec, model=self.model, url=url, temperature=temperature)
        resp = await client.responses.create(**body)
        return read_responses(resp, ep.url)
