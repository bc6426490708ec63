"""Stand-in for microsoft/GUI-Actor's `gui_actor` package (see ../README.md)."""
