"""The conversation archive: the per-agent file layout, its reader and writer, export and
import, and the live mirror (ARCHITECTURE.md § Archive)."""
