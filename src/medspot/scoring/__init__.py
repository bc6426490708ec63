"""Scoring, pure: protocols (presets), judging steps, the sequential walk, run scores, metrics.
Imports no journal writer, no thread, no adapter."""
