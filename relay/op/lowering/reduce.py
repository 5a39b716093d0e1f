"""Lowering rules (being written)."""
