"""Answers from evidence: extractive now, LLM-generated through the same Answerer contract."""
