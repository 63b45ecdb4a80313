"""Text analysis shared by every stage: language detection (:mod:`.language`), the BM25
analysers (:mod:`.analysis`) and the Kazakh stemmer (:mod:`.kazakh`).

Pure functions over strings: this package imports nothing else of citewise's, so the stores,
ingestion, retrieval and answering all use it without depending on each other.
"""
