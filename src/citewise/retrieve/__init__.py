"""Retrieval: embeddings, BM25 analysis, fusion, reranking and the hybrid pipeline."""
