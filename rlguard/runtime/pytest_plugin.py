"""pytest plugin entry point (being written)."""
