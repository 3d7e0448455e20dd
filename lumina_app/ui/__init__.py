"""Reflex states, components and pages (UI state only)."""
