"""Worker agents that see only MemoryAPI."""
