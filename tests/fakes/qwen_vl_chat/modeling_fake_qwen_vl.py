"""Stand-in for Qwen-VL-Chat's model: `chat` with Qwen-VL's signature and config fallback."""

import torch
from transformers import Qwen2ForCausalLM


class FakeQwenVL(Qwen2ForCausalLM):
    def chat(
        self,
        tokenizer,
        query,
        history,
        system="You are a helpful assistant.",
        append_history=True,
        stop_words_ids=None,
        generation_config=None,
        **kwargs,
    ):
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
