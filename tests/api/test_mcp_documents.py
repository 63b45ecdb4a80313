"""The MCP ``ask`` tool's whole-document questions, through the SDK's own client over HTTP:
a pinned document inside the key's collections is read whole; one outside them is unknown."""

from __future__ import annotations

from tests.api.test_mcp import KEY_A, KEY_B, call, client, run, secured  # noqa: F401


def test_ask_lists_a_pinned_documents_sections_inside_the_keys_collections(secured):  # noqa: F811
    server, _ = secured

    async def go():  # type: ignore[no-untyped-def]
        async with client(server.url, KEY_A) as s:
            error, out = await call(s, "ask", question="List the sections",
                                    documents=["warranty.md"])
            assert not error, out
            assert out["answer"] == ("The sections of alpha/warranty.md, in document order:\n"
                                     "- Batteries [1]")
            assert [c["section"] for c in out["citations"]] == [["Warranty", "Batteries"]]
            # named in the question, no pin needed
            error, out = await call(s, "ask", question="Summarize payroll.md", extractive=True)
            assert not error and "Salaries are paid on the 25th. [1]" in out["answer"]
        async with client(server.url, KEY_B) as s:  # alpha is not this key's
            error, out = await call(s, "ask", question="List the sections",
                                    documents=["warranty.md"])
            assert error and "warranty.md" in out

    run(go)
