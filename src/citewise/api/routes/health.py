"""``GET /api/health``: index stats, which models are loaded, whether the LLM is reachable."""

from __future__ import annotations

import httpx
from fastapi import APIRouter
from fastapi.concurrency import run_in_threadpool

from citewise import __version__
from citewise.api.deps import StateDep
from citewise.api.schemas import Health, LLMHealth

router = APIRouter(prefix="/api", tags=["health"])


def _reachable(base_url: str) -> bool:
    try:
        return httpx.get(f"{base_url.rstrip('/')}/models", timeout=1.5).status_code < 500
    except httpx.HTTPError:
        return False


@router.get("/health")
async def health(state: StateDep) -> Health:
    """Index stats and model state. Never loads a model; a remote LLM provider is probed with
    ``GET {base_url}/models`` (1.5 s timeout), the bundled one reported as started or not."""
    engine, s = state.engine, state.settings
    info = await run_in_threadpool(engine.store.info)
    loaded = engine.loaded()
    name = s.llm_provider.strip().lower()
    reachable: bool | None = None
    base_url = engine.provider_url()
    if name != "none" and base_url:
        reachable = await run_in_threadpool(_reachable, base_url)
    return Health(
        status="ok", version=__version__, documents=info.documents, chunks=info.chunks,
        embedding_model=info.embedding_model,
        models_loaded={k: v for k, v in loaded.items() if k != "llm"},
        llm=LLMHealth(provider=name, model=s.llm_model or None, loaded=loaded["llm"],
                      reachable=reachable),
        active_streams=state.streams.active,
    )
