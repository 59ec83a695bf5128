"""MemoryService: observe, claim, remember over store + llm + embed."""
