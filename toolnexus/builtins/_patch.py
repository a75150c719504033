"""Placeholder: filled by the built-in tools work."""
