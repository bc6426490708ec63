"""Stand-in for Qwen-VL-Chat's model: `chat` with Qwen-VL's signature and config fallback."""

from typing import Any

import torch
from transformers import Qwen2ForCausalLM


class FakeQwenVL(Qwen2ForCausalLM):
    def chat(
        self,
        tokenizer: Any,
        query: str,
        history: list[tuple[str, str]] | None,
        system: str = "You are a helpful assistant.",
        append_history: bool = True,
        stop_words_ids: Any = None,
        generation_config: Any = None,
        **kwargs: Any,
    ) -> tuple[str, list[tuple[str, str]]]:
        generation_config = (
            generation_config if generation_config is not None else (self.generation_config)
        )
        self.seen_generation_configs = [
            *getattr(self, "seen_generation_configs", []),
            generation_config,
        ]
        text = (
            f"<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n{query}<|im_end|>\n"
            "<|im_start|>assistant\n"
        )
        ids = torch.tensor([tokenizer(text).input_ids], device=self.device)
        out = self.generate(ids, generation_config=generation_config, **kwargs)
        response = tokenizer.decode(out[0, ids.shape[1] :], skip_special_tokens=True)
        return response, [*(history or []), (query, response)]
