"""Opening the configured chat provider: the one place that knows every kind.

:func:`open_provider` maps ``CITEWISE_LLM_PROVIDER`` to a provider: ``none`` to None, ``local``
to the bundled model (:mod:`citewise.answer.local`, which starts llama.cpp), every other name to
an :class:`~citewise.answer.providers.OpenAICompatible` client on its preset
(:data:`~citewise.answer.providers.PRESETS`). It sits above both modules, so
:mod:`~citewise.answer.providers` (the protocol and the client) imports neither.
"""

from __future__ import annotations

from citewise.answer.local import local_provider
from citewise.answer.providers import (
    LOCAL,
    NONE,
    PRESETS,
    PROVIDERS,
    ChatProvider,
    OpenAICompatible,
    api_key_for,
)
from citewise.config import Settings
from citewise.errors import ConfigError


def open_provider(settings: Settings) -> ChatProvider | None:
    """The provider the settings name, or None for ``none``.

    Raises ConfigError for an unknown name, a preset without a needed key or base URL, and
    ModelError when the bundled model is missing or fails its checks.
    """
    name = settings.llm_provider.strip().lower()
    if name == NONE:
        return None
    if name == LOCAL:
        return local_provider(settings)
    preset = PRESETS.get(name)
    if preset is None:
        raise ConfigError(f"CITEWISE_LLM_PROVIDER={settings.llm_provider!r} is not known; "
                          f"use one of: {', '.join(PROVIDERS)}")
    base_url = settings.llm_base_url or preset.base_url
    if not base_url:
        raise ConfigError(f"provider {name!r} needs CITEWISE_LLM_BASE_URL "
                          "(for example http://127.0.0.1:8080/v1)")
    model = settings.llm_model or preset.model
    if not model:
        raise ConfigError(f"provider {name!r} needs CITEWISE_LLM_MODEL (the served model's name)")
    key = api_key_for(settings, preset)
    if preset.needs_key and not key:
        raise ConfigError(f"provider {name!r} needs an API key: set {preset.key_env} or "
                          "CITEWISE_LLM_API_KEY")
    return OpenAICompatible(name, base_url, model, key, settings.llm_timeout)


__all__ = ["open_provider"]
