"""The MCP server's ``update_memory`` and ``forget`` (#43, finding 6) from outside, on a real
server per database: a memory the person added by hand, or pinned, is refused ("forbidden:
… only the person can change or forget it") and stays as it is; one added over MCP is
changed as before; someone else's id is "not found", never "pinned"."""

from __future__ import annotations

import pytest

from tests.mcp_server.test_mcp_server import call, mcp_session, refused, rest, server

pytestmark = pytest.mark.slow
__all__ = ["server"]  # the module's server fixture, one per database
ONLY = "only the person can change or forget it"


async def test_the_persons_memories_are_refused_to_mcp_tools(server) -> None:
    with rest(server, "alice") as http:
        hand = {"agentId": "assistant", "text": "Alice's cat is Tom."}
        by_hand = http.post("/api/v1/memories", json=hand).json()
    async with mcp_session(server, "key-alice") as alice:
        over_mcp = (await call(alice, "remember", text="Alice drinks rooibos."))["memory"]
        with rest(server, "alice") as http:
            pinned = http.patch(f"/api/v1/memories/{over_mcp['id']}", json={"pinned": True})
            assert pinned.status_code == 200
        for memory, why in ((by_hand, "added by hand"), (over_mcp, "pinned")):
            said = await refused(alice, "update_memory", id=memory["id"], text="Alice is Eve.")
            assert "forbidden: " in said and ONLY in said and why in said, said
            said = await refused(alice, "forget", id=memory["id"])
            assert ONLY in said and why in said, said
        another = (await call(alice, "remember", text="Alice sings bass."))["memory"]
        edited = await call(alice, "update_memory", id=another["id"], text="Alice sings tenor.")
        assert edited["memory"]["text"] == "Alice sings tenor."
    async with mcp_session(server, "key-bob") as bob:
        for memory in (by_hand, over_mcp):
            said = await refused(bob, "forget", id=memory["id"])
            assert "not found" in said and ONLY not in said, said
    with rest(server, "alice") as http:
        for memory in (by_hand, over_mcp):
            now = http.get(f"/api/v1/memories/{memory['id']}").json()
            assert (now["text"], now["status"]) == (memory["text"], "active")
