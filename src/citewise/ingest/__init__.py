"""Ingestion: parse files into blocks, chunk them, embed and store them incrementally."""
