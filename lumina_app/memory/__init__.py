"""The memory layer (ARCHITECTURE.md § Dual-track memory): the policy over the cold store and hot
window. ``manager`` holds the write order, the window reads and rebuilds; the modules
beside it are the read repositories each consumer is handed (``reads.MemoryReads``)."""

from lumina_app.memory.manager import MemoryManager
from lumina_app.memory.reads import MemoryReads
from lumina_app.memory.views import MemoryView, WindowStats
from lumina_app.memory.write_hooks import DeleteHook, FinalHook

__all__ = ["DeleteHook", "FinalHook", "MemoryManager", "MemoryReads", "MemoryView", "WindowStats"]
