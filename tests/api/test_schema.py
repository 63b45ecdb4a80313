"""Property-based fuzzing of every operation in the OpenAPI schema (schemathesis): a bounded
number of generated requests per operation, and no response may be a 5xx."""

from __future__ import annotations

import schemathesis
from hypothesis import HealthCheck, given, settings

EXAMPLES = 12


def test_no_server_errors_on_generated_requests(make_app, docs_dir):
    # schemathesis's ASGI client sends Host: testserver, a name the server must be told of
    app, _ = make_app(ingest=[docs_dir], ingest_roots=[docs_dir], allowed_hosts=["testserver"])
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    checked = []
    for result in schema.get_all_operations():
        operation = result.ok()

        @given(case=operation.as_strategy())
        @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                  suppress_health_check=list(HealthCheck))
        def no_5xx(case) -> None:  # type: ignore[no-untyped-def]
            response = case.call()
            assert response.status_code < 500, (case.method, case.path, response.text[:300])

        no_5xx()
        checked.append(f"{operation.method.upper()} {operation.path}")
    assert len(checked) == 23 and "POST /api/scan" in checked
    assert "GET /v1/models/{model}" in checked
