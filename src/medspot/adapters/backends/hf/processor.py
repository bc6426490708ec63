"""Loading a checkpoint's transformers processor: `AutoProcessor`, or, without torchvision,
the processor class built from its image processor and tokenizer alone (used by `families`
and `own_code`)."""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from medspot.errors import AdapterUnavailable

__all__ = ["load_processor"]

log = logging.getLogger(__name__)


def _read_chat_template(checkpoint: str) -> str | None:
    import transformers.utils as tu

    cached_file: Any = getattr(tu, "cached_file")  # noqa: B009
    for name in ("chat_template.jinja", "chat_template.json"):
        path = cached_file(
            checkpoint,
            name,
            _raise_exceptions_for_missing_entries=False,
            _raise_exceptions_for_connection_errors=False,
        )
        if path:
            text = Path(path).read_text(encoding="utf-8")
            if name.endswith(".json"):
                value = json.loads(text).get("chat_template")
                return str(value) if value else None
            return text
    return None


def _image_only_processor(checkpoint: str, trust_remote_code: bool) -> Any:
    """The checkpoint's processor class built from its image processor and tokenizer alone,
    for environments without torchvision (whose video processors need it)."""
    import transformers
    import transformers.models.auto.processing_auto as pa

    names: Mapping[str, str] = getattr(pa, "PROCESSOR_MAPPING_NAMES")  # noqa: B009
    tf: Any = transformers

    cfg = tf.AutoConfig.from_pretrained(checkpoint, trust_remote_code=trust_remote_code)
    cls_name = names.get(cfg.model_type)
    cls = getattr(transformers, str(cls_name), None) if cls_name else None
    if cls is None:
        raise AdapterUnavailable(f"no processor class known for model type {cfg.model_type!r}")

    def init(
        self: Any,
        image_processor: Any = None,
        tokenizer: Any = None,
        chat_template: str | None = None,
        **kwargs: Any,
    ) -> None:
        cls.__init__(self, image_processor, tokenizer, None, chat_template=chat_template)

    image_only = type(f"{cls.__name__}ImageOnly", (cls,), {"__init__": init})
    tok = tf.AutoTokenizer.from_pretrained(checkpoint, trust_remote_code=trust_remote_code)
    ip = tf.AutoImageProcessor.from_pretrained(checkpoint, trust_remote_code=trust_remote_code)
    template = _read_chat_template(checkpoint) or getattr(tok, "chat_template", None)
    return image_only(ip, tok, chat_template=template)


def load_processor(checkpoint: str, trust_remote_code: bool = False) -> tuple[Any, bool]:
    """AutoProcessor, or the image-only fallback when a video processor cannot load. The
    second value says whether the fallback was used."""
    import transformers

    auto: Any = transformers.AutoProcessor
    try:
        return auto.from_pretrained(checkpoint, trust_remote_code=trust_remote_code), False
    except ImportError as e:
        if "torchvision" not in str(e).lower():
            raise _unavailable(checkpoint, e) from None
        log.info("no torchvision: building %s's processor without its video part", checkpoint)
    try:
        return _image_only_processor(checkpoint, trust_remote_code), True
    except ImportError as e:
        # e.g. Mistral 3's PixtralProcessor: its module imports torchvision itself
        raise _unavailable(checkpoint, e) from None


def _unavailable(checkpoint: str, e: ImportError) -> AdapterUnavailable:
    text = " ".join(str(e).split())
    missing = "torchvision" if "torchvision" in text.lower() else (e.name or "a package")
    return AdapterUnavailable(
        f"the processor of {checkpoint} cannot be built: it needs {missing}, which is not "
        f"installed (pip install {missing}). transformers said: {text[:300]}"
    )
