"""`gui_actor.modeling`: the Qwen2-VL backbone class (upstream adds the pointer head)."""

from transformers import Qwen2VLForConditionalGeneration


class Qwen2VLForConditionalGenerationWithPointer(Qwen2VLForConditionalGeneration):
    pass
