"""The `medspot` command with the `lamp-panel` test environment registered: what the tests of
the live commands run as a process (`python tests/live/_lamp_cli.py live run ...`)."""

from __future__ import annotations

import sys

import _lamp_panel

from medspot.cli import main

if __name__ == "__main__":
    _lamp_panel.register()
    sys.exit(main(sys.argv[1:]))
