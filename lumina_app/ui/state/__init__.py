"""Reflex states: UI state only (which conversation is open, the visible page, the text
being streamed). Everything else is asked of the services."""
