"""The HTTP side: the FastAPI app, the /runs viewer and the `mini-fix setup` pages."""
