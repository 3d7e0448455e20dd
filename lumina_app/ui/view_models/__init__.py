"""View models: the plain dicts and pure functions the UI states show and arrange."""
