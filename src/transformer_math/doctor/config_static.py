"""Doctor checks: (being written)."""
