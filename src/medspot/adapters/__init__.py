"""Model adapters: the contract (`base`), the registry, and one module per family."""

from medspot.adapters.base import (
    Adapter,
    AdapterContext,
    Convention,
    Prediction,
    StepRequest,
    Usage,
)

__all__ = ["Adapter", "AdapterContext", "Convention", "Prediction", "StepRequest", "Usage"]
