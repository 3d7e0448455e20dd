"""What follows a run: the rolling summary (``summaries``, ``summary``) and long-term
memory extraction (``memory_extractor``), subscribed to the engine's ``on_run_ended``
by the composition root."""
