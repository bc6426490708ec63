"""`gui_actor.inference.inference` with the upstream signature and return value.

Upstream renders the conversation with its chat template, appends the assistant starter
`<|im_start|>assistant<|recipient|>os\npyautogui.click(<|pointer_start|><|pointer_pad|>
<|pointer_end|>)`, runs the model once and ranks image patches with the pointer head; the
region centres come back as `pred["topk_points"]`, a list of `(x, y)` tuples in 0..1. Here the
patches are ranked by a dot product with the last token's hidden state (no trained head)."""

from typing import Any

import torch

CALLS: list[dict[str, Any]] = []  # what each call was given, for the tests


def inference(
    conversation: list[dict[str, Any]],
    model: Any,
    tokenizer: Any,
    data_processor: Any,
    logits_processor: Any = None,
    use_placeholder: bool = False,
    topk: int = 5,
) -> dict[str, Any]:
    CALLS.append({"conversation": conversation, "topk": topk, "model": model})
    text = data_processor.apply_chat_template(
        conversation, tokenize=False, add_generation_prompt=False
    )
    images = [
        c["image"]
        for m in conversation
        if isinstance(m["content"], list)
        for c in m["content"]
        if c.get("type") == "image"
    ]
    inputs = data_processor(text=[text], images=images, return_tensors="pt").to(model.device)
    with torch.inference_mode():
        out = model(**inputs, output_hidden_states=True)
    hidden = out.hidden_states[-1][0]
    image_mask = inputs["input_ids"][0] == model.config.image_token_id
    scores = hidden[image_mask] @ hidden[-1]
    merge = model.config.vision_config.spatial_merge_size
    _, n_height, n_width = (inputs["image_grid_thw"][0] // merge).tolist()
    order = torch.argsort(scores, descending=True).tolist()[:topk]
    points = [((i % n_width + 0.5) / n_width, (i // n_width + 0.5) / n_height) for i in order]
    return {"output_text": "", "n_width": n_width, "n_height": n_height, "topk_points": points}
