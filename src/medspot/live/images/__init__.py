"""Environment images: one image per live environment family, built from this repository
(`build`: a Debian 12 base, the family's pinned packages, medspot from the host's wheelhouse),
run by a container engine (`engine`: podman or docker) for the container executor
(`medspot.live.loop.executors.container`) and as Ray worker nodes. `names` holds the image
references and labels, `check` says whether an image fits the medspot that runs.
Light to import: nothing here starts an engine."""

from medspot.live.images.names import BASE_IMAGE, ImageLabels, image_ref, source_hash

__all__ = ["BASE_IMAGE", "ImageLabels", "image_ref", "source_hash"]
