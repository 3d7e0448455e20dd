"""The models a run talks to: the factory with the OpenAI-compatible and offline demo
providers (``factory``), the demo model's tools, and ACP coding agents (``acp``)."""
