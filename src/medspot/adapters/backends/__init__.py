"""Backends a model card runs on: `openai` (any OpenAI-compatible server), `hf` (in-process
transformers), with the shared `imageprep` and `pricing`."""
