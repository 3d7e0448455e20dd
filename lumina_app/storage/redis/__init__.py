"""Redis: the hot window, run locks and run event streams shared between instances."""
