"""MemoryService: observe, claim, remember over store + llm + embed."""

from mnemonet.service.build import build_memory_service
from mnemonet.service.memory import MemoryService

__all__ = ["MemoryService", "build_memory_service"]
