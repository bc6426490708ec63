"""MedSPOT from the harnesses people already run: `inspect` (Inspect AI's tasks, static and
live, and its logs read back into run folders). Each subpackage imports its framework only
when it is used; the error names the extra that installs it."""
