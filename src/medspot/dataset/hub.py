"""Datasets on the Hugging Face hub: `hf://owner/name` (or `owner/name`) through
`huggingface_hub.snapshot_download(repo_type="dataset")` into the normal hub cache.

`huggingface_hub` is imported only when a hub dataset is asked for (extra `medspot[hub]`).
It honours `HF_HUB_CACHE` / `HF_HOME` and, with `HF_HUB_OFFLINE=1`, resolves an already
cached snapshot without any network access.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path

from medspot.errors import ConfigError, DataError

__all__ = ["HF_PREFIX", "is_hub_id", "parse_repo_id", "snapshot"]

log = logging.getLogger(__name__)

HF_PREFIX = "hf://"
_NAME = r"[A-Za-z0-9][A-Za-z0-9._-]*"
_REPO_RE = re.compile(rf"^{_NAME}/{_NAME}(@[A-Za-z0-9._/-]+)?$")


def is_hub_id(text: str) -> bool:
    """`hf://...` always; `owner/name` when it looks like a repository id. (Callers check for
    an existing local path first: a local folder wins.)"""
    if text.startswith(HF_PREFIX):
        return True
    return bool(_REPO_RE.match(text))


def parse_repo_id(text: str) -> str:
    """The repository id (`owner/name`, optionally `@revision`) of `hf://owner/name`,
    `hf://datasets/owner/name` or `owner/name`."""
    rest = text[len(HF_PREFIX) :] if text.startswith(HF_PREFIX) else text
    rest = rest.strip("/")
    if rest.startswith("datasets/"):
        rest = rest[len("datasets/") :]
    if not _REPO_RE.match(rest):
        raise ConfigError(f"{text!r} is not a hub dataset id like hf://owner/name")
    return rest


def snapshot(repo_id: str) -> Path:
    """The local snapshot folder of the hub dataset `repo_id` (`owner/name[@revision]`),
    downloaded into the hub cache if needed (or found there offline)."""
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        raise ConfigError(
            f"reading the hub dataset {repo_id!r} needs huggingface_hub: pip install 'medspot[hub]'"
        ) from None
    repo, _, revision = repo_id.partition("@")
    log.info("resolving hub dataset %s (revision %s)", repo, revision or "main")
    try:
        folder = snapshot_download(repo_id=repo, repo_type="dataset", revision=revision or None)
    except Exception as e:  # the boundary with huggingface_hub: its errors become messages
        # (LocalEntryNotFoundError, RepositoryNotFoundError, HfHubHTTPError, HFValidationError,
        # proxy and connection errors, ...); the traceback goes to the debug log.
        log.debug("snapshot_download(%r) failed", repo_id, exc_info=True)
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise DataError(
            f"cannot get the hub dataset {repo!r}: {type(e).__name__}: {first}"
        ) from None
    return Path(folder)
