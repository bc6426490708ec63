"""Stand-in for Qwen-VL-Chat's tokenizer: a fast tokenizer with `from_list_format`."""

from typing import Any

from transformers import PreTrainedTokenizerFast


class FakeQwenVLTokenizer(PreTrainedTokenizerFast):
    image_start_tag = "<img>"
    image_end_tag = "</img>"

    def from_list_format(self, list_format: list[dict[str, Any]]) -> str:
        text = ""
        num_images = 0
        for ele in list_format:
            if "image" in ele:
                num_images += 1
                text += f"Picture {num_images}: "
                text += self.image_start_tag + ele["image"] + self.image_end_tag + "\n"
            elif "text" in ele:
                text += ele["text"]
        return text
