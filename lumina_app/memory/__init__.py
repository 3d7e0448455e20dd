"""The memory layer (DESIGN §4): the dual-track policy over the cold store and the hot
window. ``manager`` holds the write order and the window reads; the modules beside it hold
what each consumer reads of the cold store."""

from lumina_app.memory.manager import DeleteHook, FinalHook, MemoryManager, MemoryView, WindowStats

__all__ = ["DeleteHook", "FinalHook", "MemoryManager", "MemoryView", "WindowStats"]
