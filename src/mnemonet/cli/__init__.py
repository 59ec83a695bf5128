"""The interactive CLI node."""
