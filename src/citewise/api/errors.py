"""Errors as HTTP responses, in one place: citewise errors to statuses, and the two shapes.

Under ``/api`` (and everywhere but ``/v1``) an error is ``{"detail": message, "code": error
class}`` (FastAPI's own ``{"detail": ...}`` for its validation and routing errors). Under
``/v1``, the OpenAI-compatible endpoint, every error has OpenAI's shape, so OpenAI clients
raise their own exceptions with the message::

    {"error": {"message": "...", "type": "invalid_request_error", "param": null,
               "code": "model_not_found"}}

``type`` is ``invalid_request_error`` for 4xx statuses and ``server_error`` for 5xx; ``param``
names the request field at fault (``messages[0].role``) when one is; ``code`` is OpenAI's where
one exists (``model_not_found``, ``invalid_api_key``, ``context_length_exceeded``,
``unknown_url``), else the citewise error class in snake case (``query_error``,
``provider_error``). Under ``/v1`` a request that fails validation, and a QueryError, are 400
(OpenAI's status for a bad request), not 422.
"""

from __future__ import annotations

import math
import re
from typing import Any

from fastapi import Request
from fastapi.exception_handlers import (
    http_exception_handler,
)
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from citewise.api.limits import BodyTooLarge
from citewise.errors import (
    CitewiseError,
    ConfigError,
    DocumentError,
    IndexError_,
    ModelError,
    NotFoundError,
    ProviderError,
    QueryError,
    QueryTooLongError,
    ShardUnavailableError,
    UploadConflictError,
    UploadError,
    UploadTooLargeError,
)

#: HTTP status per error class; the most specific class listed wins.
STATUS: dict[type[CitewiseError], int] = {
    QueryTooLongError: 413,
    UploadTooLargeError: 413,
    UploadConflictError: 409,
    QueryError: 422,
    NotFoundError: 404,
    UploadError: 400,
    DocumentError: 422,
    ShardUnavailableError: 503,  # a shard's server is down: retry later, the request was fine
    IndexError_: 409,
    ProviderError: 502,
    ConfigError: 503,
    ModelError: 503,
}

#: The OpenAI-compatible endpoint's prefix: errors under it have OpenAI's shape.
OPENAI_PREFIX = "/v1"
#: OpenAI's codes for the citewise errors that have one (the others: the class in snake case)
_OPENAI_CODES = {"QueryTooLongError": "context_length_exceeded"}
_HTTP_CODES = {401: "invalid_api_key", 403: "permission_denied", 404: "unknown_url",
               405: "method_not_allowed", 413: "request_too_large"}


def status_for(err: CitewiseError) -> int:
    for cls in type(err).__mro__:
        if cls in STATUS:
            return STATUS[cls]
    return 500


def is_openai_path(path: str) -> bool:
    return path == OPENAI_PREFIX or path.startswith(OPENAI_PREFIX + "/")


def snake_case(name: str) -> str:
    """``"QueryTooLongError"`` -> ``"query_too_long_error"``; ``"IndexError_"`` ->
    ``"index_error"``."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name.strip("_")).lower()


def openai_error(status: int, message: str, *, param: str | None = None,
                 code: str | None = None, headers: dict[str, str] | None = None) -> JSONResponse:
    """An error response in OpenAI's shape (see the module docstring)."""
    kind = "server_error" if status >= 500 else "invalid_request_error"
    return JSONResponse({"error": {"message": message, "type": kind, "param": param,
                                   "code": code}}, status_code=status, headers=headers)


def openai_error_for(err: CitewiseError) -> JSONResponse:
    """``err`` in OpenAI's shape: the status of :func:`status_for`, except 400 for a bad
    question (QueryError and its subclasses; OpenAI has no 422)."""
    status = 400 if isinstance(err, QueryError) else status_for(err)
    name = type(err).__name__
    return openai_error(status, str(err), code=_OPENAI_CODES.get(name, snake_case(name)))


def stream_error(message: str, code: str) -> dict[str, Any]:
    """The ``data`` of an error event inside a ``/v1`` stream (OpenAI's shape; the client
    raises it as an APIError); ``code`` is the citewise error class name."""
    status = {cls.__name__: s for cls, s in STATUS.items()}.get(code, 500)
    return {"error": {"message": message,
                      "type": "server_error" if status >= 500 else "invalid_request_error",
                      "param": None, "code": _OPENAI_CODES.get(code, snake_case(code))}}


def _param(loc: tuple[Any, ...]) -> str | None:
    """``("body", "messages", 0, "role")`` -> ``"messages[0].role"``."""
    out = ""
    for part in loc[1:] if loc and loc[0] in ("body", "query", "path") else loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or None


async def citewise_error(request: Request, err: Exception) -> JSONResponse:
    assert isinstance(err, CitewiseError)
    if is_openai_path(request.url.path):
        return openai_error_for(err)
    return JSONResponse({"detail": str(err), "code": type(err).__name__},
                        status_code=status_for(err))


async def body_too_large(request: Request, err: Exception) -> JSONResponse:
    assert isinstance(err, BodyTooLarge)
    if is_openai_path(request.url.path):
        return openai_error(413, err.detail, code="request_too_large",
                            headers={"Connection": "close"})
    return JSONResponse({"detail": err.detail, "code": err.code}, status_code=413,
                        headers={"Connection": "close"})


async def http_error(request: Request, err: Exception) -> Response:
    """FastAPI's response for an HTTPException (401, 403, 404 unknown URL, 405 ...), in
    OpenAI's shape under ``/v1``."""
    assert isinstance(err, StarletteHTTPException)
    if not is_openai_path(request.url.path):
        return await http_exception_handler(request, err)
    message = err.detail if isinstance(err.detail, str) else str(err.detail)
    if err.status_code == 404 and message == "Not Found":
        message = f"Invalid URL ({request.method} {request.url.path})"
    return openai_error(err.status_code, message, code=_HTTP_CODES.get(err.status_code),
                        headers=dict(err.headers) if err.headers else None)


#: Validation errors listed in a 422 (the rest are counted).
MAX_ERRORS = 20
#: Characters of the offending input a validation error repeats.
EXCERPT = 100


def _safe(value: Any) -> Any:
    """``value`` with every string short and encodable (a lone surrogate escaped)."""
    if isinstance(value, str):
        text = value if len(value) <= EXCERPT else value[:EXCERPT] + "..."
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # NaN and Infinity are no JSON
    if isinstance(value, int) and abs(value) > 10**EXCERPT:
        return "a very long integer"
    if isinstance(value, int | float) or value is None:
        return value
    if isinstance(value, list | dict | tuple):  # not repeated: it may be the whole body
        return f"a {type(value).__name__} of {len(value)} items"
    return _safe(repr(value)[:EXCERPT])


def _short_error(error: Any) -> dict[str, Any]:
    """One of pydantic's errors without the whole input it was given (a 46 MiB body was
    echoed back): its type, location, message and a short excerpt of the input."""
    return {"type": _safe(str(error.get("type", ""))),
            "loc": [_safe(p) for p in error.get("loc", ())][:10],
            "msg": _safe(str(error.get("msg", ""))),
            "input": _safe(error.get("input"))}


async def validation_error(request: Request, err: Exception) -> JSONResponse:
    """FastAPI's 422 for a request that fails validation; under ``/v1`` OpenAI's 400 naming
    the first field at fault."""
    assert isinstance(err, RequestValidationError)
    if not is_openai_path(request.url.path):
        errors = err.errors()
        shown = [_short_error(e) for e in errors[:MAX_ERRORS]]
        if len(errors) > MAX_ERRORS:
            shown.append({"type": "more", "loc": [], "input": None,
                          "msg": f"and {len(errors) - MAX_ERRORS} more errors"})
        return JSONResponse({"detail": shown}, status_code=422)
    first = _short_error(err.errors()[0]) if err.errors() else {}
    param = _param(tuple(first.get("loc", ())))
    reason = str(first.get("msg", "invalid request"))
    message = f"Invalid value for '{param}': {reason}" if param else f"Invalid request: {reason}"
    code = "missing_required_parameter" if first.get("type") == "missing" else "invalid_value"
    return openai_error(400, message, param=param, code=code)


__all__ = ["OPENAI_PREFIX", "STATUS", "body_too_large", "citewise_error", "http_error",
           "is_openai_path", "openai_error", "openai_error_for", "snake_case", "status_for",
           "stream_error", "validation_error"]
