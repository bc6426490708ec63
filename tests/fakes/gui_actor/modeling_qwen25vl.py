"""`gui_actor.modeling_qwen25vl`: the Qwen2.5-VL backbone class (upstream adds the head)."""

from transformers import Qwen2_5_VLForConditionalGeneration


class Qwen2_5_VLForConditionalGenerationWithPointer(Qwen2_5_VLForConditionalGeneration):
    pass
