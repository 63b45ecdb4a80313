"""Settings: one validated object, built by the caller and passed down, never at import time.

Sources, highest priority first: keyword arguments, ``CITEWISE_*`` environment variables, a
``.env`` file in the working directory, ``citewise.toml`` in the working directory, then
``$CITEWISE_HOME/citewise.toml``, then the defaults below.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from enum import Enum
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, SecretStr, field_validator
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from citewise.errors import ConfigError
from citewise.text.language import LANGUAGE_NAMES


class Fusion(str, Enum):
    """How the dense and the BM25 lists are merged (see :mod:`citewise.retrieve.fusion`)."""

    COMBINE_AND_DEDUP = "combine_and_dedup"
    RRF = "rrf"
    WEIGHTED = "weighted"


class SearchMode(str, Enum):
    HYBRID = "hybrid"
    DENSE = "dense"
    SPARSE = "sparse"


def default_home() -> Path:
    return Path(os.environ.get("CITEWISE_HOME", Path.home() / ".citewise")).expanduser()


def _check_toml(path: Path) -> None:
    """Raise ConfigError naming ``path`` when it exists but is not valid UTF-8 TOML."""
    if not path.is_file():
        return
    try:
        tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise ConfigError(f"{path.resolve()}: not a valid TOML settings file ({err}); "
                          "fix it or remove it") from None


#: Default :attr:`Settings.alpha_by_language`: the BM25 weight of weighted fusion per question
#: language where it differs from ``alpha``, each chosen on a dev split (docs/retrieval.md,
#: docs/benchmarks.md "Fusion weight per language"). kk 0.8: KazQAD dev nDCG@10 0.718 against
#: 0.610 at 0.4 (the ``use`` dense leg reads little Kazakh: 0.391 alone, BM25 0.689); ru 0.6:
#: XQuAD-ru dev 0.975 against 0.962. zh and en keep 0.4 (best on their dev halves).
ALPHA_BY_LANGUAGE: dict[str, float] = {"kk": 0.8, "ru": 0.6}

#: Default :attr:`Settings.cross_language_alpha`: the BM25 weight of weighted fusion for a
#: question whose language the index holds little of, chosen on the XQuAD dev halves of
#: ru/zh->en and en->ru/zh with ``use`` (docs/benchmarks.md "Cross-language questions"): the
#: best mean dev nDCG@10 among the weights below neither leg on any pair; 0.2 was best on the
#: mean (0.883 against 0.881) but below the dense leg on en->ru (0.882 against 0.902). 0.0
#: ranks such a question by the dense leg (BM25 alone: nDCG@10 0.15-0.37 there).
CROSS_LANGUAGE_ALPHA = 0.0

#: A collection's name: the folder under $home/collections/ and the value stored per document.
COLLECTION_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$"
COLLECTION_NAME = re.compile(COLLECTION_PATTERN)

# --- PostgreSQL URLs (CITEWISE_STORE, CITEWISE_SESSIONS_URL, citewise migrate): the one set of
# rules for which URLs name PostgreSQL and how each client library wants them written
#: URL schemes that name a PostgreSQL database.
POSTGRES_SCHEMES = ("postgresql", "postgres", "postgresql+psycopg")


def is_postgres_url(url: str) -> bool:
    """Whether ``url`` is ``SCHEME://...`` with a scheme of :data:`POSTGRES_SCHEMES`."""
    scheme, sep, _ = url.partition("://")
    return bool(sep) and scheme in POSTGRES_SCHEMES


def libpq_url(url: str) -> str:
    """``url`` as libpq (psycopg) takes it: ``postgresql+psycopg://``,
    ``postgresql+psycopg2://`` and ``postgres://`` become ``postgresql://``; anything else is
    returned unchanged."""
    for prefix in ("postgresql+psycopg://", "postgresql+psycopg2://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql://" + url.removeprefix(prefix)
    return url


def sqlalchemy_url(url: str) -> str:
    """``url`` as SQLAlchemy takes it, PostgreSQL through the psycopg 3 driver:
    ``postgresql://`` and ``postgres://`` become ``postgresql+psycopg://`` (so one URL serves
    both the index and the sessions); anything else is returned unchanged."""
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url.removeprefix(prefix)
    return url


def redact_url(url: str) -> str:
    """``url`` with its password replaced by ``***`` (for messages and ``citewise status``);
    a URL without one is returned unchanged."""
    scheme, sep, rest = url.partition("://")
    creds, at, host = rest.rpartition("@")
    if not at or ":" not in creds:
        return url
    return f"{scheme}{sep}{creds.split(':', 1)[0]}:***@{host}"


LLM_PROVIDERS = ("local", "none", "openai", "ollama", "groq", "openrouter", "gemini", "vllm",
                 "llamacpp", "openai-compatible")


class Settings(BaseSettings):
    """Every citewise setting; each is also the environment variable ``CITEWISE_<NAME>``."""

    model_config = SettingsConfigDict(
        env_prefix="CITEWISE_",
        env_file=".env",
        extra="forbid",
        toml_file=["citewise.toml"],
        validate_default=True,
        # a refused value is never echoed into an error message: it may be a secret
        hide_input_in_errors=True,
    )

    home: Path = Field(default_factory=default_home, description="Index, sessions and config.")
    store: str = Field(
        "", description="Index location: a folder path or sqlite path (empty = "
        "$home/index.sqlite3), or postgresql://user:password@host:port/database for the "
        "PostgreSQL + pgvector store (pip install 'citewise[postgres]')"
    )

    # --- models -------------------------------------------------------------------------
    embedding_model: str = Field(
        "minilm",
        description="'minilm' (all-MiniLM-L6-v2), 'use' (multilingual USE v3), 'e5' "
        "(multilingual-e5-small, 4-bit), or a local sentence-transformers model folder.",
    )
    reranker_model: str = Field(
        "", description="'bundled' (the cross-encoder shipped with citewise, ONNX int8, see "
        "docs/reranker.md), a .onnx file written by `citewise train-reranker`, a local "
        "sentence-transformers cross-encoder folder, or empty = no reranker."
    )
    embedding_precision: Literal["auto", "fp32", "int8"] = Field(
        "auto", description="Precision of 'minilm': 'int8' (about 2x faster on CPUs with "
        "VNNI; recorded as 'minilm-int8'), 'fp32', or 'auto': the one the index already holds, "
        "else int8 where the CPU has VNNI and fp32 elsewhere (see docs/benchmarks.md).",
    )
    threads: int = Field(2, ge=1, description="CPU threads for model inference.")
    embed_batch_size: int = Field(32, ge=1, description="Texts per embedding batch (sorted "
                                  "by length first).")

    # --- chunking -----------------------------------------------------------------------
    chunk_tokens: int = Field(480, ge=32, description="Target chunk size in model tokens.")
    chunk_overlap: int = Field(48, ge=0, description="Overlap between split chunks, in tokens.")

    # --- ingest limits and OCR ----------------------------------------------------------
    max_file_mb: float = Field(
        512.0, gt=0, description="Largest file an ingest reads, in MiB (checked before it is "
        "read; a larger one is reported failed).",
    )
    max_pages: int = Field(
        5000, ge=1, description="Most pages of a PDF an ingest reads (checked before the "
        "first page; a longer one is reported failed).",
    )
    ocr: bool = Field(
        False, description="Read image-only PDF pages (scans) with OCR (RapidOCR, pip "
        "install 'citewise[ocr]'); off: they are reported as needing OCR.",
    )
    ocr_dpi: int = Field(
        100, ge=50, le=400, description="Resolution PDF pages are rendered at for OCR "
        "(dots per inch; see docs/benchmarks.md for accuracy and speed).",
    )

    # --- retrieval ----------------------------------------------------------------------
    fusion: Fusion = Fusion.WEIGHTED
    alpha: float = Field(0.4, ge=0.0, le=1.0, description="Weight of BM25 in weighted fusion.")
    alpha_by_language: Annotated[dict[str, float], NoDecode] = Field(
        default_factory=lambda: dict(ALPHA_BY_LANGUAGE),
        description="Weight of BM25 in weighted fusion for questions detected in a language "
        "(ISO 639-1 code -> weight in [0, 1], a JSON object: '{\"kk\": 0.9}'); other languages "
        "use alpha. Defaults chosen on dev splits (docs/retrieval.md).",
    )
    cross_language_alpha: float = Field(
        CROSS_LANGUAGE_ALPHA, ge=0.0, le=1.0,
        description="Weight of BM25 in weighted fusion for a cross-language question: one whose "
        "detected language holds under 10% of the index's chunks (a Russian question over "
        "English documents), whose words BM25 rarely finds. Overrides alpha_by_language for "
        "it. Chosen on XQuAD dev splits (docs/retrieval.md).",
    )
    rrf_k: int = Field(60, ge=1, description="RRF constant k (Cormack et al., 2009).")
    dense_k: int = Field(50, ge=1, description="Candidates taken from dense search.")
    sparse_k: int = Field(50, ge=1, description="Candidates taken from BM25.")
    dense_exact_below: int = Field(
        20_000, ge=0, description="SQLite store: dense search is exact below this many chunks; "
        "from it on, int8 codes pick a shortlist of max(10 x k, 100) chunks whose exact cosines "
        "give the top k (recall@10 1.0 on real embeddings). A huge value keeps it exact.",
    )
    dense_ivf_from: int = Field(
        200_000, ge=0, description="SQLite store: from this many chunks dense search scans "
        "4-bit product-quantisation codes (faiss fast scan) in the inverted lists nearest the "
        "query (k-means per index generation) and re-scores the best exactly (about 13x "
        "faster than exact search at 1M chunks).",
    )
    dense_ivf_scan: float = Field(
        0.3, gt=0.0, le=1.0, description="SQLite store: share of the chunks whose codes an "
        "inverted-list search scans, nearest lists first. 0.3 kept recall@10 0.995 on real "
        "embeddings (0.5: 0.998); higher: better recall, slower; 1.0 scans every code.",
    )
    hnsw_ef_search: int = Field(
        100, ge=1, le=1000, description="PostgreSQL store: HNSW candidate list per dense query "
        "(pgvector hnsw.ef_search; at least dense_k is used). Higher: better recall, slower.",
    )
    postgres_bm25_index: bool = Field(
        False, description="PostgreSQL store: answer BM25 from an in-memory postings index per "
        "process, built from the chunks once per index generation (the same scores; no reads "
        "of the postings rows). Memory: ~6 bytes a posting, ~0.55 GB at 1M chunks.",
    )
    postgres_shards: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="A collection sharded across PostgreSQL servers: two "
        "or more postgresql:// URLs, comma-separated (or a JSON list), always in the same order; "
        "each document lives on one server, searches ask all of them at once (docs/scaling.md). "
        "Empty = one store, CITEWISE_STORE.",
    )
    coverage_weight: float = Field(
        0.3, ge=0.0, le=1.0,
        description="Weight of IDF-weighted query-term coverage in the final score.",
    )
    rerank_candidates: int = Field(
        5, ge=1, description="Fused candidates sent to the reranker (5: chosen with "
        "rerank_weight on development questions of SciFact, XQuAD-en, CUAD and citewise's docs, "
        "docs/benchmarks.md).",
    )
    rerank_weight: float = Field(
        0.2, ge=0.0, le=1.0, description="Weight of the reranker score against the fused score "
        "(0.2: the shipped reranker then lowers no collection measured; at 0.7 it lowered "
        "every one but SciFact).",
    )
    rerank_windows: Literal["all", "best"] = Field(
        "best", description="How an ONNX reranker reads a passage longer than its input: 'best' "
        "only the window sharing the most question terms (one model run per passage); 'all' "
        "its overlapping windows, the best logit kept (about 1.7x the runs on SciFact; level "
        "with one window on every collection measured: docs/benchmarks.md).",
    )
    rerank_languages: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: ["en"],
        description="Languages of the questions the reranker reranks, as detected (ISO 639-1: "
        "en ru kk zh ja ko ar el he), comma-separated or a JSON list: 'en,ru'; questions in "
        "other languages keep the fused order. Empty = every language. The shipped reranker "
        "reads English only (measured on XQuAD-zh: nDCG@10 0.980 -> 0.708 with it).",
    )
    language_routing: bool = Field(
        True, description="When the index holds several languages, prefer chunks in the "
        "question's language (falling back to the others when none is relevant).",
    )
    dense_language_gate: bool = Field(
        True, description="Search a question by BM25 alone when the embedding model was not "
        "trained on its language (minilm: English only; use: en ru zh ja ko ar; e5: all), "
        "falling back to the hybrid search when BM25 finds nothing. Measured: minilm fused "
        "with BM25 scores 0.33 nDCG@10 below BM25 alone on XQuAD-ru (docs/benchmarks.md).",
    )
    top_k: int = Field(5, ge=1, le=100)
    per_file: int = Field(1, ge=1, description="At most this many chunks per file in the top_k.")
    min_score: float = Field(
        0.15,
        ge=0.0,
        le=1.0,
        description="Evidence whose relevance (0..1, see retrieve.retriever) is below this is "
        "'not found in the documents'.",
    )
    max_query_chars: int = Field(2000, ge=16, description="Longer questions keep their end.")

    # --- answer -------------------------------------------------------------------------
    answer_sentences: int = Field(3, ge=1, le=10, description="Sentences in an extractive answer.")
    evidence: Literal["sentences", "passages"] = Field(
        "sentences",
        description="What an answer reads: 'sentences' (the best sentences of a wider pool of "
        "chunks, each cited by its own span; see citewise.answer.selection) or 'passages' (the "
        "top_k chunks, one per file, as before 0.2).",
    )
    evidence_pool: int = Field(
        16, ge=1, le=100,
        description="Chunks retrieved for an answer with evidence='sentences' (at most "
        "evidence_per_file per file); their sentences compete for the top_k passages.",
    )
    evidence_per_file: int = Field(
        5, ge=1, description="At most this many chunks per file in the evidence pool (5: a "
        "settings table and the section explaining one setting can both come from one file; "
        "3 before, see docs/benchmarks.md, Fourth round).",
    )
    evidence_tokens: int = Field(
        220, ge=40,
        description="Budget for the sentence evidence in the prompt, in tokens of the embedding "
        "model's tokenizer (evidence='sentences'); it sets the local model's wait for the first "
        "word.",
    )
    abstain: bool = Field(
        True,
        description="Answer 'the documents do not contain an answer' without asking the model "
        "when none of the best evidence sentences holds a quarter of the question's content terms "
        "(see citewise.answer.selection.answerable).",
    )
    answer_scorer: str = Field(
        "bundled",
        description="The answer-sentence scorer that orders the evidence sentences and decides "
        "when none answers: 'bundled' (the cross-encoder shipped with citewise, ONNX int8, "
        "trained by scripts/train_answer_scorer.py), a .onnx file of the same kind, or empty "
        "for the rule-based ranking alone (cosine + term coverage, see "
        "citewise.answer.selection).",
    )
    answer_scorer_languages: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: ["en"],
        description="Languages of the questions the answer scorer reads, as detected (ISO "
        "639-1), comma-separated or a JSON list; other languages keep the rule-based ranking. "
        "Empty = every language. The shipped scorer reads English only.",
    )
    prefer_named_documents: bool = Field(
        True,
        description="When a question names a document by names only some of the evidence "
        "documents hold (a contract's parties), answer from those documents only.",
    )
    answer_scorer_weight: float = Field(
        0.5, ge=0.0, le=1.0,
        description="Weight of the answer scorer's probability against the rule-based score "
        "(cosine and term coverage) when ordering evidence sentences; 1 = the scorer's order.",
    )
    answer_min_probability: float = Field(
        0.1, ge=0.0, le=1.0,
        description="With abstain on and the answer scorer used, decline when none of the three "
        "best evidence sentences reaches this probability of answering (chosen on development "
        "questions, docs/benchmarks.md).",
    )
    answer_trust_probability: float = Field(
        1.0, ge=0.0, le=1.0,
        description="With the answer scorer used, answer when one of the three best evidence "
        "sentences reaches this probability, even if the word and match floors would decline "
        "(a long question shares few of its words with its answer); 1 (the default) turns it "
        "off: at 0.5 it changed right answers on the dev questions by -0.009 [-0.032, +0.013] "
        "(docs/benchmarks.md).",
    )
    abstain_min_match: float = Field(
        0.38, ge=0.0, le=1.0,
        description="With abstain on, also decline when none of the three best evidence "
        "sentences matches the question at least this well: 0.6 x its cosine + 0.4 x the share "
        "of the question's content terms it holds (higher is better); a question about a "
        "topic the documents "
        "cover whose answer they do not hold. Tuned for the default embedding model (minilm); "
        "0 turns the floor off (see citewise.answer.selection.answerable and "
        "docs/benchmarks.md, Near-miss abstention).",
    )

    # --- LLM (see citewise.answer.providers) --------------------------------------------
    llm_provider: str = Field(
        "local",
        description="'local' (bundled model, in-process), 'none' (extractive answers only), or "
        "an OpenAI-compatible preset: openai, ollama, groq, openrouter, gemini, vllm, llamacpp, "
        "openai-compatible (needs llm_base_url).",
    )
    llm_base_url: str = Field("", description="Chat endpoint base URL; empty = the preset's.")
    llm_model: str = Field(
        "", description="Model name; for 'local', a bundled model name or a .gguf path."
    )
    llm_api_key: SecretStr | None = Field(
        None, description="API key; empty = the preset's variable (e.g. OPENAI_API_KEY)."
    )
    llm_timeout: float = Field(
        60.0, gt=0, description="Seconds to wait for the provider's next byte."
    )
    llm_max_tokens: int = Field(400, ge=16, le=8192, description="Longest answer, in tokens.")
    llm_temperature: float = Field(0.0, ge=0.0, le=2.0)
    answer_style: Literal["auto", "quote", "write", "pick", "pick-write"] = Field(
        "auto",
        description="How a question is answered from sentence evidence: 'quote' (the best "
        "evidence sentences quoted, each cited; no model is loaded), 'write' (the LLM writes a "
        "cited answer), 'pick' (it picks the passages that answer by number and they are "
        "quoted), 'pick-write' (it picks, then writes citing the picked passages only) or "
        "'auto' (quote for the bundled local model, whose written answers were never more "
        "accurate than the quote and took 5-7 s more; write for any other provider); see "
        "citewise.answer.pick and docs/benchmarks.md.",
    )

    def resolved_answer_style(self) -> str:
        """``answer_style`` with ``auto`` resolved: ``quote`` for the bundled ``local``
        provider, ``write`` for any other (``none`` quotes whatever the style)."""
        if self.answer_style != "auto":
            return self.answer_style
        return "quote" if self.llm_provider.strip().lower() == "local" else "write"
    llm_threads: int = Field(
        2, ge=1, description="CPU threads of the local model (use 1 on a busy machine)."
    )
    llm_context: int = Field(
        4096, ge=1024, description="Context window of the model, in tokens: the bundled model's "
        "n_ctx, and the prompt budget for a remote provider that does not report its own "
        "(llama.cpp's /props, a /v1/models context field; see citewise.answer.budget)."
    )
    context_tokens: int = Field(
        1200, ge=200,
        description="Budget for the numbered evidence in the prompt, in tokens of the embedding "
        "model's tokenizer (about 4 characters each), shared equally by the passages.",
    )
    whole_document_tokens: int = Field(
        6000, ge=128,
        description="Most tokens of a document sent whole for a summary or comparison (also "
        "bounded by the model's context window); a longer one is summarised in parts "
        "(map-reduce, see citewise.answer.summarize).",
    )
    history_turns: int = Field(10, ge=0, description="Earlier turns sent with a question.")
    scan_checker: Literal["auto", "llm", "rules"] = Field(
        "auto",
        description="How `citewise scan` judges a clause: 'llm' (the configured provider, with "
        "the rule check as fallback), 'rules' (deterministic checks only), or 'auto' (llm for a "
        "remote provider; rules for the local CPU model, which takes seconds per clause).",
    )
    support_threshold: float = Field(
        0.5, ge=0.0, le=1.0,
        description="An answer sentence whose support by its cited evidence (0..1) is below this "
        "is flagged as unsupported.",
    )

    # --- HTTP API and chat sessions (citewise serve; see docs/api.md) ---------------------
    host: str = Field("127.0.0.1", description="Address `citewise serve` binds to.")
    port: int = Field(8765, ge=1, le=65535, description="Port `citewise serve` listens on.")
    api_key: SecretStr | None = Field(
        None, description="Admin key for upload, delete, reindex and approvals (sent as "
        "'Authorization: Bearer <key>' or 'X-API-Key'); empty = admin only when bound to "
        "localhost.",
    )
    api_keys: dict[SecretStr, list[str]] = Field(
        default_factory=dict,
        description="Read keys and the collections each may read, as a JSON object (env) or a "
        "TOML table: {\"<key>\": [\"hr\", \"legal\"]}; [\"*\"] reads every collection. When "
        "set, searching, chatting and reading sources need one of these keys (or the admin "
        "key, which reads everything), sent like the admin key; empty = reading is open.",
    )
    cors_origins: list[str] = Field(
        default_factory=list, description="Origins allowed to call the API from a browser."
    )
    allowed_hosts: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Host names the server answers to besides its defaults (loopback names, "
        "any IP address, the bound host; the machine's name when bound to every address), "
        "comma-separated or a JSON list: 'docs.example.org,citewise.lan'; '*' answers to any "
        "name. A request naming another host (a DNS rebinding page) gets 421.",
    )
    collection: str = Field(
        "default", pattern=COLLECTION_PATTERN,
        description="The collection ingested documents belong to (CLI) and uploads go to by "
        "default: the folder under $home/collections/ they are stored in.",
    )
    max_upload_mb: float = Field(50.0, gt=0, description="Largest uploaded file, in MiB.")
    max_json_kb: int = Field(
        1024, ge=16, description="Largest request body that is not a file upload (JSON: a "
        "chat turn, /v1/chat/completions, /mcp), in KiB; larger: HTTP 413 before any of it "
        "is parsed.",
    )
    upload_types: list[str] = Field(
        default_factory=lambda: [".pdf", ".docx", ".xlsx", ".xlsm", ".pptx", ".epub", ".eml",
                                 ".html", ".htm", ".md", ".markdown", ".rst",
                                 ".txt", ".text", ".csv", ".json", ".py", ".js", ".ts", ".java",
                                 ".go", ".rs", ".c", ".cpp", ".h"],
        description="File name suffixes accepted by uploads.",
    )
    ingest_roots: list[Path] = Field(
        default_factory=list,
        description="Folders a chat INGEST may read from, besides the collection folder.",
    )
    max_request_chars: int = Field(
        20000, ge=16, description="Longest question the API accepts, in characters (longer: "
        "HTTP 413); up to it, a question is cut to its last max_query_chars characters.",
    )
    sessions_url: str = Field(
        "", description="SQLAlchemy URL of the chat sessions database (postgresql:// uses "
        "psycopg 3); empty = the index's database when CITEWISE_STORE is a postgresql:// URL, "
        "else sqlite:///$home/sessions.sqlite3.",
    )
    history_tokens: int = Field(
        1500, ge=50, description="Token budget of the earlier turns sent with a question; "
        "older turns are folded into a rolling summary.",
    )
    planner: str = Field(
        "auto", pattern=r"^(auto|llm|rules)$",
        description="'llm' plans each message with the LLM, 'rules' with rules only, 'auto' "
        "with rules except an ambiguous message with a remote provider (not 'local').",
    )
    sse_ping_seconds: float = Field(
        15.0, gt=0, description="Seconds of silence after which an SSE stream sends a ': ping' "
        "comment.",
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        home_toml = default_home() / "citewise.toml"
        for path in (Path("citewise.toml"), home_toml):
            _check_toml(path)
        return (
            init_settings,
            env_settings,
            dotenv_settings,
            TomlConfigSettingsSource(settings_cls),
            TomlConfigSettingsSource(settings_cls, toml_file=home_toml),
        )

    @field_validator("llm_provider", mode="after")
    @classmethod
    def _known_provider(cls, value: str) -> str:
        name = value.strip().lower()
        if name not in LLM_PROVIDERS:
            raise ValueError(f"unknown LLM provider; use one of: {', '.join(LLM_PROVIDERS)}")
        return name

    @field_validator("api_keys", mode="before")
    @classmethod
    def _check_api_keys(cls, value: object) -> object:
        """Shape checks whose messages never contain a key (pydantic would put a dict key in
        the error's location)."""
        if not isinstance(value, dict):  # pydantic reports ValueError, not TypeError
            raise ValueError('must be a JSON object {"<key>": ["<collection>", ...]}')  # noqa: TRY004
        for n, (key, names) in enumerate(value.items(), start=1):
            where = f"entry {n} of CITEWISE_API_KEYS"
            if isinstance(key, SecretStr):
                key = key.get_secret_value()
            if not isinstance(key, str) or len(key.strip()) < 8:
                raise ValueError(f"{where}: a key must be a string of at least 8 characters")
            if not isinstance(names, list) or not names or not all(
                    isinstance(c, str) and (c == "*" or COLLECTION_NAME.fullmatch(c))
                    for c in names):
                raise ValueError(f"{where}: the collections must be a non-empty list of names "
                                 "(letters, digits, _ and -, up to 64) or [\"*\"]")
        return value

    @field_validator("alpha_by_language", mode="before")
    @classmethod
    def _language_weights(cls, value: object) -> dict[str, float]:
        """A JSON object or a dict of ISO 639-1 code -> BM25 weight; raises ValueError naming
        an unknown code or a weight outside [0, 1]."""
        if isinstance(value, str):
            try:
                value = json.loads(value) if value.strip() else {}
            except json.JSONDecodeError as err:
                raise ValueError(f"give a JSON object such as {{\"kk\": 0.9}} ({err})") from None
        if not isinstance(value, dict):  # pydantic reports ValueError, not TypeError
            raise ValueError("give a JSON object of language code -> BM25 weight, such as "  # noqa: TRY004
                             "{\"kk\": 0.9}")
        out: dict[str, float] = {}
        for code, weight in value.items():
            key = str(code).strip().lower()
            if key not in LANGUAGE_NAMES:
                raise ValueError(f"unknown language code {code!r}; use ISO 639-1 codes the "
                                 f"detector returns: {' '.join(LANGUAGE_NAMES)}")
            if isinstance(weight, bool) or not isinstance(weight, int | float) or not (
                    0.0 <= weight <= 1.0):
                raise ValueError(f"the BM25 weight of {key!r} must be a number in [0, 1], "
                                 f"got {weight!r}")
            out[key] = float(weight)
        return out

    def alpha_for(self, language: str) -> float:
        """The BM25 weight of weighted fusion for a question detected as ``language`` (an ISO
        639-1 code, or ``""`` when undetermined): ``alpha_by_language[language]`` when set,
        else ``alpha``. In [0, 1]; higher gives BM25 more weight."""
        return self.alpha_by_language.get(language, self.alpha)

    @field_validator("rerank_languages", "answer_scorer_languages", mode="before")
    @classmethod
    def _known_languages(cls, value: object) -> list[str]:
        """``"en,ru"``, ``'["en", "ru"]'`` or a list, lower-cased; raises ValueError naming
        the codes the language detector cannot return (they would never be reranked)."""
        if isinstance(value, str):
            text = value.strip()
            value = json.loads(text) if text.startswith("[") else [
                c for c in text.split(",") if c.strip()]
        if not isinstance(value, list) or not all(isinstance(c, str) for c in value):
            raise ValueError("give language codes, comma-separated (en,ru) or a JSON list")
        codes = [c.strip().lower() for c in value]
        unknown = [c for c in codes if c not in LANGUAGE_NAMES]
        if unknown:
            raise ValueError(f"unknown language code(s) {', '.join(unknown)}; use ISO 639-1 "
                             f"codes the detector returns: {' '.join(LANGUAGE_NAMES)}")
        return codes

    @field_validator("allowed_hosts", mode="before")
    @classmethod
    def _host_names(cls, value: object) -> list[str]:
        """``"a.example,b.example"``, a JSON list or a list of host names (no scheme, no
        port), lower-cased; raises ValueError for anything else."""
        if isinstance(value, str):
            text = value.strip()
            value = json.loads(text) if text.startswith("[") else text.split(",")
        if not isinstance(value, list) or not all(isinstance(h, str) for h in value):
            raise ValueError("give host names, comma-separated or a JSON list")
        names = [h.strip().lower().rstrip(".") for h in value if h.strip()]
        bad = [h for h in names if h != "*" and not re.fullmatch(r"[a-z0-9._-]+|\[[0-9a-f:.]+\]",
                                                                 h)]
        if bad:
            raise ValueError(f"not a host name: {bad[0][:100]!r} (give names such as "
                             "docs.example.org, without scheme or port)")
        return names

    @field_validator("postgres_shards", mode="before")
    @classmethod
    def _shard_urls(cls, value: object) -> list[str]:
        """``"url1,url2"``, a JSON list or a list; raises ValueError for a URL that is not
        postgresql:// (the URL itself is not echoed: it may hold a password)."""
        if isinstance(value, str):
            text = value.strip()
            value = json.loads(text) if text.startswith("[") else text.split(",")
        if not isinstance(value, list) or not all(isinstance(u, str) for u in value):
            raise ValueError("give postgresql:// URLs, comma-separated or a JSON list")
        urls = [u.strip() for u in value if u.strip()]
        for i, url in enumerate(urls):
            if not is_postgres_url(url):
                raise ValueError(f"shard {i + 1} is not a postgresql://user:password@host:port/"
                                 "database URL")
        if len(urls) == 1:
            raise ValueError("one URL is one server: give two or more, or use CITEWISE_STORE")
        return urls

    @field_validator("home", mode="after")
    @classmethod
    def _expand_home(cls, value: Path) -> Path:
        return value.expanduser()

    @property
    def collection_dir(self) -> Path:
        """The folder uploads are stored in: ``$home/collections/<collection>``."""
        return self.collection_folder(self.collection)

    def collection_folder(self, name: str) -> Path:
        """The folder uploads to collection ``name`` are stored in:
        ``$home/collections/<name>``. Raises ConfigError for a name that is not a collection
        name (letters, digits, ``_`` and ``-``, up to 64), so no name can leave the folder."""
        if not COLLECTION_NAME.fullmatch(name):
            raise ConfigError(f"{name[:80]!r} is not a collection name: use letters, digits, "
                              "_ and - (up to 64)")
        return self.home / "collections" / name

    @property
    def sessions_database(self) -> str:
        """The SQLAlchemy URL of the chat sessions database: ``sessions_url``; when empty, the
        index's PostgreSQL database if ``store`` is a ``postgresql://`` URL (the first shard's
        with ``postgres_shards``), else
        ``sqlite:///$home/sessions.sqlite3``."""
        if self.sessions_url:
            return self.sessions_url
        if self.postgres_shards:
            return self.postgres_shards[0]
        if is_postgres_url(self.store):
            return self.store
        return f"sqlite:///{self.home / 'sessions.sqlite3'}"

    @property
    def index_path(self) -> Path:
        """The SQLite file of the embedded store."""
        if not self.store:
            return self.home / "index.sqlite3"
        path = Path(self.store).expanduser()
        return path / "index.sqlite3" if path.suffix == "" else path
