"""The in-process transformers backend: the adapter, the model families, own-code models."""
