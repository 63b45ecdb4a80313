"""citewise: answers questions from your own documents and cites where each answer comes from."""

__version__ = "0.1.0"
