"""Data layer of transformer_math (see ARCHITECTURE.md)."""
