"""Agent runtime: definitions, LLM providers, context building, sessions and runs."""
