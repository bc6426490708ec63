"""The package version, in one place for the code (pyproject.toml states it too)."""

__version__ = "0.1.0"

__all__ = ["__version__"]
