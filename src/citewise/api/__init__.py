"""The HTTP API (FastAPI): :func:`citewise.api.app.create_app` builds it from Settings."""
