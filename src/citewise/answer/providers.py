"""Chat providers: any OpenAI-compatible endpoint, reached with the official ``openai`` client.

A provider turns chat messages into a stream of text pieces. Every provider citewise knows is a
:class:`Preset` (base URL, the environment variable holding its API key, a default model); the
bundled local model (:mod:`citewise.answer.local`) serves the same protocol on 127.0.0.1, so
``CITEWISE_LLM_PROVIDER=local`` is one more provider, not a special case.

A server's context window is read from the server itself where it reports one
(:func:`reported_context`); :mod:`citewise.answer.budget` fits every prompt within it.

Failures (unreachable, timeout, HTTP 4xx/5xx, empty output) raise :class:`ProviderError` with a
message that names the provider and its URL and never contains the API key; the answerer turns
them into the extractive fallback.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypedDict, cast

from citewise.config import LLM_PROVIDERS, Settings
from citewise.errors import ProviderError

if TYPE_CHECKING:
    from openai import Stream
    from openai.types.chat import ChatCompletionChunk


class Message(TypedDict):
    role: str  # "system" | "user" | "assistant"
    content: str


@dataclass(frozen=True)
class Preset:
    """Where a provider lives. ``key_env`` is the variable its users already set (None: no key);
    an empty ``model`` means the user must name one (CITEWISE_LLM_MODEL)."""

    name: str
    base_url: str
    key_env: str | None
    model: str
    needs_key: bool = False


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset("openai", "https://api.openai.com/v1", "OPENAI_API_KEY", "gpt-4o-mini", True),
        Preset("ollama", "http://127.0.0.1:11434/v1", None, "qwen2.5:1.5b"),
        Preset("groq", "https://api.groq.com/openai/v1", "GROQ_API_KEY",
               "llama-3.1-8b-instant", True),
        Preset("openrouter", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY",
               "openai/gpt-4o-mini", True),
        Preset("gemini", "https://generativelanguage.googleapis.com/v1beta/openai/",
               "GEMINI_API_KEY", "gemini-2.0-flash", True),
        Preset("vllm", "http://127.0.0.1:8000/v1", "VLLM_API_KEY", ""),
        Preset("llamacpp", "http://127.0.0.1:8080/v1", None, "local"),
        Preset("openai-compatible", "", "OPENAI_API_KEY", ""),
    )
}
LOCAL = "local"
NONE = "none"
PROVIDERS = (LOCAL, NONE, *PRESETS)
assert set(PROVIDERS) == set(LLM_PROVIDERS), "config.LLM_PROVIDERS and the presets must agree"


class ChatProvider(Protocol):
    """Streams a chat completion. ``name`` is for messages, ``model`` for the record."""

    name: str
    model: str

    def stream(self, messages: Sequence[Message], *, max_tokens: int,
               temperature: float) -> Iterator[str]:
        """Text pieces as the model writes them. Raises ProviderError on any failure."""
        ...


class OpenAICompatible:
    """A chat endpoint spoken to with ``openai.OpenAI`` (streaming ``chat.completions``).

    ``timeout`` is in seconds and bounds connecting and every wait for the next bytes, so a
    stalled stream fails instead of hanging. One retry on connection errors and 5xx (the
    client's own retry policy).
    """

    def __init__(self, name: str, base_url: str, model: str, api_key: str | None,
                 timeout: float = 60.0) -> None:
        import openai

        self.name, self.base_url, self.model = name, base_url.rstrip("/"), model
        self._openai = openai
        self._secret = api_key or ""
        self._client = openai.OpenAI(
            base_url=self.base_url, api_key=api_key or "not-needed", max_retries=1,
            timeout=openai.Timeout(timeout, connect=min(timeout, 10.0)),
        )

    def __repr__(self) -> str:  # never shows the key
        return f"OpenAICompatible({self.name!r}, {self.base_url!r}, {self.model!r})"

    def context_length(self) -> int | None:
        """The context window the server reports for this model, in tokens
        (:func:`reported_context`); None when it reports none."""
        return reported_context(self.base_url, self.model, self._secret or None)

    def _fail(self, what: str) -> ProviderError:
        return ProviderError(redact(f"{self.name} at {self.base_url}: {what}", self._secret))

    def stream(self, messages: Sequence[Message], *, max_tokens: int,
               temperature: float) -> Iterator[str]:
        oa = self._openai
        wrote, finish = False, None
        try:
            response = cast("Stream[ChatCompletionChunk]", self._client.chat.completions.create(
                model=self.model, messages=list(messages), max_tokens=max_tokens,  # type: ignore[arg-type]
                temperature=temperature, stream=True,
            ))
            with response:
                for chunk in response:
                    if not chunk.choices:
                        continue
                    choice = chunk.choices[0]
                    finish = choice.finish_reason or finish
                    piece = choice.delta.content if choice.delta else None
                    if piece:
                        wrote = True
                        yield piece
        except oa.AuthenticationError:
            raise self._fail("the API key was refused (HTTP 401); check CITEWISE_LLM_API_KEY "
                             "or the provider's key variable") from None
        except oa.NotFoundError:
            raise self._fail(f"not found (HTTP 404): check the base URL and that the model "
                             f"{self.model!r} exists") from None
        except oa.APIStatusError as err:
            raise self._fail(f"HTTP {err.status_code}: {_short(err.message)}") from None
        except oa.APITimeoutError:
            raise self._fail("timed out (CITEWISE_LLM_TIMEOUT)") from None
        except oa.APIConnectionError:
            raise self._fail("unreachable (is the server running?)") from None
        except oa.APIError as err:  # server-sent error event ...
            raise self._fail(_short(str(err))) from None
        except ValueError as err:  # a malformed stream (JSONDecodeError is a ValueError)
            raise self._fail(f"sent a malformed stream ({_short(str(err), 80)})") from None
        except Exception as err:  # noqa: BLE001 - the provider boundary: any failure falls back
            raise self._fail(f"failed: {type(err).__name__}: {_short(str(err), 120)}") from None
        if not wrote:
            raise self._fail("returned an empty answer")
        if finish is None:  # the connection ended without the final chunk: a cut answer
            raise self._fail("the stream broke off before the answer was finished")


#: Fields of a ``/v1/models`` entry that hold the served context length (OpenRouter, vLLM,
#: Groq, LM Studio).
MODEL_CONTEXT_FIELDS = ("context_length", "max_model_len", "context_window",
                        "max_context_length")


def _positive_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _from_props(body: Any) -> int | None:
    if not isinstance(body, dict):
        return None
    settings = body.get("default_generation_settings")
    if isinstance(settings, dict) and _positive_int(settings.get("n_ctx")):
        return _positive_int(settings.get("n_ctx"))
    return _positive_int(body.get("n_ctx"))


def _from_models(body: Any, model: str) -> int | None:
    entries = body.get("data") if isinstance(body, dict) else None
    if not isinstance(entries, list):
        return None
    entries = [e for e in entries if isinstance(e, dict)]
    chosen = [e for e in entries if e.get("id") == model] or (entries if len(entries) == 1
                                                              else [])
    for entry in chosen:
        for key in MODEL_CONTEXT_FIELDS:
            found = _positive_int(entry.get(key))
            if found:
                return found
    return None


_reported: dict[tuple[str, str], int | None] = {}


def reported_context(base_url: str, model: str, api_key: str | None = None,
                     timeout: float = 3.0) -> int | None:
    """The context length, in tokens, that the OpenAI-compatible server at ``base_url``
    (``.../v1``) reports for ``model``: llama.cpp's ``GET /props``
    (``default_generation_settings.n_ctx``; the window the server runs with), else the
    ``GET {base_url}/models`` entry for ``model`` (or the only entry) and its first field in
    :data:`MODEL_CONTEXT_FIELDS`; None when neither tells (OpenAI, Ollama) or the server
    cannot be reached within ``timeout`` seconds. ``api_key`` is sent as a bearer token. An
    answer (a length, or none reported) is kept for the life of the process, per (URL,
    model); an unreachable server is asked again next time."""
    import httpx

    base = base_url.rstrip("/")
    key = (base, model)
    if key in _reported:
        return _reported[key]
    root = base.removesuffix("/v1")
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    answered = False
    for url, parse in ((f"{root}/props", _from_props),
                       (f"{base}/models", lambda b: _from_models(b, model))):
        try:
            response = httpx.get(url, timeout=timeout, headers=headers)
        except httpx.HTTPError:
            continue
        answered = True
        try:
            found = parse(response.json()) if response.status_code == 200 else None
        except ValueError:
            found = None
        if found:
            _reported[key] = found
            return found
    if answered:
        _reported[key] = None
    return None


_BEARER = re.compile(r"(?i)\b(bearer\s+|api[-_]?key\s*[=:]\s*)[^\s\"',]+")
_KEYLIKE = re.compile(r"\b(sk|gsk|pk|rk|key)[-_][A-Za-z0-9_-]{8,}")


def redact(text: str, secret: str = "") -> str:
    """``text`` with ``secret`` and anything shaped like a key or bearer token replaced by
    ``***`` (provider error messages sometimes echo the key they refused)."""
    if secret:
        text = text.replace(secret, "***")
    text = _BEARER.sub(lambda m: f"{m.group(1)}***", text)
    return _KEYLIKE.sub(lambda m: f"{m.group(1)}-***", text)


def _short(text: str, limit: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit] + " …"


def api_key_for(settings: Settings, preset: Preset) -> str | None:
    """The explicit setting, else the preset's usual variable, resolved at the last moment."""
    if settings.llm_api_key is not None and settings.llm_api_key.get_secret_value():
        return settings.llm_api_key.get_secret_value()
    return os.environ.get(preset.key_env) if preset.key_env else None


def wait_until_ready(base_url: str, timeout: float = 30.0) -> None:
    """Poll ``GET {base_url}/models`` until it answers 200; ProviderError after ``timeout`` s."""
    import httpx

    deadline = time.monotonic() + timeout
    while True:
        try:
            if httpx.get(f"{base_url.rstrip('/')}/models", timeout=2.0).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise ProviderError(f"{base_url} did not become ready within {timeout:.0f} s")
        time.sleep(0.2)


__all__ = ["MODEL_CONTEXT_FIELDS", "PRESETS", "PROVIDERS", "ChatProvider", "Message",
           "OpenAICompatible", "Preset", "reported_context", "wait_until_ready"]
