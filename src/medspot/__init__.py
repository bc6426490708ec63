"""medspot: the reference evaluation harness for MedSPOT."""

from medspot._version import __version__

__all__ = ["__version__"]
