"""Dense embedding models behind one interface (:class:`Embedder`), shared by ingestion (chunk
vectors) and retrieval (query vectors); below both in the layers. The models and how each is
loaded are described in :mod:`citewise.embed.embedder`."""

from citewise.embed.embedder import (
    BUILTIN,
    MINILM_FILES,
    MINILM_NAMES,
    MINILM_TOKENIZER,
    MODELS,
    PRECISIONS,
    TORCH_EXTRA,
    E5Embedder,
    Embedder,
    MiniLMEmbedder,
    OnnxEmbedder,
    SentenceTransformerEmbedder,
    USEEmbedder,
    choose_precision,
    cpu_flags,
    load_embedder,
    wordpiece_tokenizer,
)

__all__ = ["BUILTIN", "MINILM_FILES", "MINILM_NAMES", "MINILM_TOKENIZER", "MODELS", "PRECISIONS",
           "TORCH_EXTRA", "E5Embedder", "Embedder", "MiniLMEmbedder", "OnnxEmbedder",
           "SentenceTransformerEmbedder", "USEEmbedder", "choose_precision", "cpu_flags",
           "load_embedder", "wordpiece_tokenizer"]
