"""One router per resource; each owns its prefix and tags."""
