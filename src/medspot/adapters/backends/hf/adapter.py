"""The in-process transformers backend (extra `[hf]`).

The runner calls `predict()` concurrently up to `max_concurrency` (= `batch_size`); requests
are collected from an asyncio queue into batches of at most `batch_size` and run by
`generate` on one worker thread, greedy unless the card asks for sampling (a re-ask).

A batch closes when it is full, or when no request is still preparing its image and
`batch_wait` has passed since its first request: a request whose image is being read when a
batch starts always joins it, however slow the reading (no race against the clock).

Options: `checkpoint` (hub id or local directory; default the card's), `device` (cpu, cuda,
cuda:1, auto = device_map="auto"; default cuda when available), `dtype` (bfloat16, float16,
float32; default bfloat16 on GPU, float32 on CPU), `batch_size` (default 1), `batch_wait`
(seconds to wait for more requests before a batch runs; default 0.02).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
from collections.abc import Mapping
from typing import Any

from medspot.adapters.backends.cardbase import CardAdapter, Generation, SentImage
from medspot.adapters.backends.hf.families import default_device, load_runner
from medspot.adapters.backends.hf.imagecheck import resize_within
from medspot.adapters.backends.hf.runner import GenItem, GenOut, Runner
from medspot.adapters.backends.imageprep import ImagePrep
from medspot.adapters.base import Convention, StepRequest, Usage
from medspot.adapters.card import ModelCard, PromptSpec, PromptStyle
from medspot.adapters.options import AdapterOptions
from medspot.errors import ConfigError, MedspotError, ModelCallError

__all__ = ["HFAdapter"]

log = logging.getLogger(__name__)

_Job = tuple[GenItem, "asyncio.Future[GenOut]"]
_POLL_S = 0.001  # how often a forming batch looks for requests that finished preparing


class _Arrival:
    """One prediction on its way to the queue (counted in `HFAdapter._arriving` until queued)."""

    __slots__ = ("done",)

    def __init__(self) -> None:
        self.done = False


class HFAdapter(CardAdapter):
    """A model card run in this process through transformers."""

    backend = "hf"

    def __init__(
        self,
        card: ModelCard,
        style: PromptStyle,
        runner: Runner,
        *,
        checkpoint: str,
        device: str,
        dtype: str | None,
        batch_size: int = 1,
        batch_wait: float = 0.02,
    ) -> None:
        super().__init__(card, style, checkpoint)
        self.runner = runner
        self.device = device
        self.dtype = dtype
        self.batch_size = max(1, batch_size) if runner.batchable else 1
        self.batch_wait = batch_wait
        self.max_concurrency = self.batch_size
        self.images = ImagePrep()
        self.batches: list[int] = []  # sizes of the batches run, for diagnostics and tests
        self._executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="medspot-hf")
        self._queue: asyncio.Queue[_Job] | None = None
        self._worker: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._arriving = 0  # predictions preparing their image, not yet queued

    @classmethod
    def from_options(
        cls, card: ModelCard, style: PromptStyle, options: AdapterOptions | Mapping[str, Any]
    ) -> HFAdapter:
        options = AdapterOptions.from_mapping(options)
        checkpoint = str(options.checkpoint or card.checkpoint)
        device = str(options.device or default_device())
        dtype = options.dtype
        batch_size = int(options.batch_size or 1)
        if batch_size < 1:
            raise ConfigError("--batch-size must be 1 or more")
        log.info("loading %s from %s on %s", card.name, checkpoint, device)
        runner = load_runner(card, checkpoint, device, str(dtype) if dtype else None)
        return cls(
            card,
            style,
            runner,
            checkpoint=checkpoint,
            device=device,
            dtype=str(dtype) if dtype else None,
            batch_size=batch_size,
            batch_wait=float(options.batch_wait if options.batch_wait is not None else 0.02),
        )

    # -- generation -------------------------------------------------------------------------
    def _abs_resized(self, spec: PromptSpec) -> bool:
        return self.convention is Convention.ABS_RESIZED and spec.resize is not None

    async def _prepare(self, request: StepRequest, spec: PromptSpec) -> SentImage:
        resize = spec.resize
        if self._abs_resized(spec):  # the model answers in pixels of what it saw: stay in bounds
            resize = resize_within(resize, self.runner.pixel_bounds)
        arrival = _Arrival()
        self._arriving += 1
        try:
            prepared = await asyncio.to_thread(
                self.images.prepare, request.image_path, request.image_size, resize, "original"
            )
            image = await asyncio.to_thread(prepared.to_pil)
        except BaseException:
            self._arrived(arrival)
            raise
        payload = (image, request.image_path, arrival)
        return SentImage(payload, prepared.sent_size, prepared.resized)

    def _arrived(self, arrival: _Arrival) -> None:
        if not arrival.done:
            arrival.done = True
            self._arriving -= 1

    async def _generate(
        self, spec: PromptSpec, image: SentImage, temperature: float | None, seed: int
    ) -> Generation:
        pil, path, arrival = image.payload
        expect = image.sent_size if self._abs_resized(spec) else None
        out = await self._submit(GenItem(spec, pil, path, temperature, expect), arrival)
        return Generation(out.text, Usage(out.input_tokens, out.output_tokens))

    def _describe_backend(self) -> dict[str, Any]:
        return {
            "device": self.device,
            "dtype": self.dtype,
            "batch_size": self.batch_size,
            "decoding": "greedy",
            **self.runner.info,
        }

    async def aclose(self) -> None:
        if self._worker is not None:
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._worker
        self._worker = None
        self._queue = None

    # -- batching ---------------------------------------------------------------------------
    async def _submit(self, item: GenItem, arrival: _Arrival) -> GenOut:
        loop = asyncio.get_running_loop()
        if self._queue is None or self._loop is not loop or self._worker is None:
            self._loop = loop
            self._queue = asyncio.Queue()
            self._worker = loop.create_task(self._work(self._queue))
        fut: asyncio.Future[GenOut] = loop.create_future()
        self._queue.put_nowait((item, fut))  # the queue is unbounded
        self._arrived(arrival)  # queued: no longer arriving (a re-ask was queued before)
        return await fut

    async def _collect(self, queue: asyncio.Queue[_Job]) -> list[_Job]:
        """The next batch: full, or closed once nothing is arriving and `batch_wait` passed."""
        batch = [await queue.get()]
        if self.batch_size == 1:
            return batch
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.batch_wait
        while len(batch) < self.batch_size:
            if not queue.empty():
                batch.append(queue.get_nowait())
            elif self._arriving == 0 and loop.time() >= deadline:
                break
            else:
                await asyncio.sleep(_POLL_S)
        return batch

    async def _work(self, queue: asyncio.Queue[_Job]) -> None:
        loop = asyncio.get_running_loop()
        while True:
            batch = await self._collect(queue)
            items = [job[0] for job in batch]
            self.batches.append(len(items))
            try:
                outs = await loop.run_in_executor(self._executor, self.runner.generate, items)
            except MedspotError as e:
                for _, fut in batch:
                    if not fut.done():
                        fut.set_exception(e)
                continue
            except Exception as e:  # a failure inside the model: an error, never a miss
                log.warning("generation failed: %s: %s", type(e).__name__, e)
                for _, fut in batch:
                    if not fut.done():
                        fut.set_exception(
                            ModelCallError(f"generation failed: {type(e).__name__}: {e}")
                        )
                continue
            for (_, fut), out in zip(batch, outs, strict=True):
                if not fut.done():
                    fut.set_result(out)
