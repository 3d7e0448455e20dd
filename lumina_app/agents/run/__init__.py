"""The run engine: a run's start (``engine``), its context (``turns``, ``context``), its
generation, steps and tools (``run_driver``, ``step``, ``client_tools``), warm sessions,
the per-owner cap."""
