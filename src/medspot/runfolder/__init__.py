"""The run folder: the names of its files, its versioned schema, the journal, the writer, the
reader and the upstream importer."""
