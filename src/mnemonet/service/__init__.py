"""MemoryService: observe, claim, remember over store + llm + embed."""

from mnemonet.service.build import build_memory_service
from mnemonet.service.memory import MemoryService
from mnemonet.service.spaces import SpacedMemory

__all__ = ["MemoryService", "SpacedMemory", "build_memory_service"]
