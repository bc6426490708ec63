"""What an environment image prepares at build time so that no container pays for it at its
first start: the caches the environments fill on first use (the seeded DICOM studies, the 3D
phantoms of InVesalius), deterministic, a few MB. Run inside the build as the image's user:
`python -m medspot.live.images.warm`."""

from __future__ import annotations

import sys

__all__ = ["main"]


def main() -> int:
    from medspot.live.envs.invesalius.phantoms import phantom_files
    from medspot.live.services.seed import seed_files

    seed_files()
    phantom_files()
    return 0


if __name__ == "__main__":
    sys.exit(main())
