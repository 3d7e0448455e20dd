"""Issue #43, findings 5, 7 and 8, from outside on a real server (Redis, keys for several
owners) on SQLite, MariaDB and PostgreSQL, through the real `openai` SDK where a client
sends it: one set of input caps for every OpenAI door with nothing stored past them,
system items stored as system rows, nesting refused before parsing, validation messages
without object reprs, idempotency records that die with what they name and expire, and the
per-owner quotas."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from datetime import timedelta

import httpx
import openai
import pytest
import sqlalchemy as sa

from lumina_app.domain import utcnow
from tests.conftest import BACKENDS, SHARED_REDIS_URL
from tests.server import AppServer

OWNERS = [f"o{i}" for i in range(24)]
MAX_CHARS = 32_000  # LUMINA_MAX_TASK_CHARS's default
MAX_MESSAGES = 1000  # LUMINA_GATEWAY_MAX_MESSAGES's default
MAX_CONVERSATIONS = 4
MAX_MESSAGES_PER_DAY = 14


@pytest.fixture(scope="module", params=BACKENDS)
def server(
    request: pytest.FixtureRequest, _databases, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[AppServer]:
    database = _databases(request.param)
    database.truncate()
    env = {
        "LUMINA_API_KEYS": ",".join(f"{owner}:key-{owner}" for owner in OWNERS),
        "LUMINA_REDIS_URL": SHARED_REDIS_URL,
        "LUMINA_REDIS_PREFIX": "caps-" + secrets.token_hex(4),
        "LUMINA_DEMO_DELAY_MS": "0",
        "LUMINA_MAX_CONVERSATIONS_PER_OWNER": str(MAX_CONVERSATIONS),
        "LUMINA_MAX_MESSAGES_PER_OWNER_PER_DAY": str(MAX_MESSAGES_PER_DAY),
    }
    workdir = tmp_path_factory.mktemp(f"caps-{request.param}")
    up = AppServer(workdir, backend_only=True, env=env, database_url=database.url)
    up.owners = iter(OWNERS)  # type: ignore[attr-defined]
    up.start()
    try:
        yield up
    finally:
        up.stop()


@pytest.fixture
def owner(server: AppServer) -> str:
    """An owner of this test only (quotas are counted per owner)."""
    return next(server.owners)  # type: ignore[attr-defined]


def _sdk(server: AppServer, who: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url + "/v1", api_key=f"key-{who}", max_retries=0)


def _http(server: AppServer, who: str) -> httpx.Client:
    headers = {"Authorization": f"Bearer key-{who}"}
    return httpx.Client(base_url=server.url, headers=headers, timeout=30)


def _rows(server: AppServer, who: str, conversation: str) -> list[tuple[str, str]]:
    uuid = conversation.removeprefix("conv_")
    with _http(server, who) as http:
        page = http.get(f"/api/v1/conversations/{uuid}/messages", params={"limit": 100})
    assert page.status_code == 200, page.text
    return [(m["role"], m["content"]) for m in page.json()["items"]]


def _conversation_count(server: AppServer, who: str) -> int:
    with _http(server, who) as http:
        page = http.get("/api/v1/conversations", params={"limit": 100})
    assert page.status_code == 200, page.text
    return len(page.json()["items"])


def _sql(server: AppServer, statement: str, **params: object) -> None:
    engine = sa.create_engine(server.database_url, poolclass=sa.pool.NullPool)
    with engine.begin() as conn:
        conn.execute(sa.text(statement), params)
    engine.dispose()


# -- one set of caps for every door (finding 5) -------------------------------------------


def test_responses_in_a_conversation_refuse_an_oversized_earlier_item(
    server: AppServer, owner: str
) -> None:
    sdk = _sdk(server, owner)
    conversation = sdk.conversations.create().id
    big = {"role": "user", "content": "x" * 200_000}
    with pytest.raises(openai.APIStatusError) as refused:
        sdk.responses.create(
            model="assistant",
            conversation=conversation,
            input=[big, {"role": "user", "content": "q"}],
        )
    assert refused.value.status_code == 413
    assert "the limit is 32000" in refused.value.message
    assert _rows(server, owner, conversation) == []


def test_responses_in_a_conversation_refuse_too_many_messages(
    server: AppServer, owner: str
) -> None:
    sdk = _sdk(server, owner)
    conversation = sdk.conversations.create().id
    many = [{"role": "user", "content": f"m{i}"} for i in range(MAX_MESSAGES + 1)]
    with pytest.raises(openai.APIStatusError) as refused:
        sdk.responses.create(model="assistant", conversation=conversation, input=many)
    assert refused.value.status_code == 413
    assert f"the limit is {MAX_MESSAGES}" in refused.value.message
    assert _rows(server, owner, conversation) == []


def test_responses_without_a_conversation_refuse_an_oversized_instruction(
    server: AppServer, owner: str
) -> None:
    sdk = _sdk(server, owner)
    with pytest.raises(openai.APIStatusError) as refused:
        sdk.responses.create(model="assistant", instructions="i" * 40_000, input="hello")
    assert refused.value.status_code == 413 and "LUMINA_MAX_TASK_CHARS" in refused.value.message
    assert _conversation_count(server, owner) == 0


def test_compact_refuses_an_oversized_item_in_a_named_conversation(
    server: AppServer, owner: str
) -> None:
    sdk = _sdk(server, owner)
    first = sdk.responses.create(model="assistant", input="Remember the number 7.")
    conversation = first.conversation.id
    before = _rows(server, owner, conversation)
    big = [{"role": "user", "content": "y" * 100_000}]
    with pytest.raises(openai.APIStatusError) as refused:
        sdk.responses.compact(model="assistant", previous_response_id=first.id, input=big)
    assert refused.value.status_code == 413
    assert _rows(server, owner, conversation) == before


def test_conversation_items_are_held_to_the_same_caps(server: AppServer, owner: str) -> None:
    sdk = _sdk(server, owner)
    with pytest.raises(openai.APIStatusError) as refused:
        sdk.conversations.create(items=[{"role": "user", "content": "z" * 250_000}])
    assert refused.value.status_code == 413 and "items[0]" in refused.value.message
    assert _conversation_count(server, owner) == 0
    conversation = sdk.conversations.create().id
    with pytest.raises(openai.APIStatusError) as refused:
        sdk.conversations.items.create(
            conversation, items=[{"type": "message", "role": "user", "content": "z" * 250_000}]
        )
    assert refused.value.status_code == 413
    assert _rows(server, owner, conversation) == []


def test_system_and_developer_items_are_stored_as_system_rows(
    server: AppServer, owner: str
) -> None:
    sdk = _sdk(server, owner)
    conversation = sdk.conversations.create(
        items=[
            {"type": "message", "role": "developer", "content": "Answer briefly."},
            {"type": "message", "role": "user", "content": "Hello"},
        ]
    ).id
    sdk.conversations.items.create(
        conversation, items=[{"type": "message", "role": "system", "content": "Be kind."}]
    )
    assert _rows(server, owner, conversation) == [
        ("SYSTEM", "Answer briefly."),
        ("USER", "Hello"),
        ("SYSTEM", "Be kind."),
    ]
    listed = sdk.conversations.items.list(conversation, order="asc")
    assert [item.role for item in listed.data] == ["system", "user", "system"]


def test_deep_nesting_is_refused_before_parsing(server: AppServer, owner: str) -> None:
    deep: object = {"leaf": 1}
    for _ in range(256):
        deep = {"x": deep}
    with _http(server, owner) as http:
        openai_door = http.post(
            "/v1/responses", json={"model": "assistant", "input": "hi", "text": deep}
        )
        lumina_door = http.post("/api/v1/conversations", json={"agentId": "assistant", "x": deep})
    assert openai_door.status_code == 400, openai_door.text
    assert openai_door.json()["error"]["type"] == "invalid_request_error"
    assert "LUMINA_MAX_JSON_DEPTH" in openai_door.json()["error"]["message"]
    assert lumina_door.status_code == 422, lumina_door.text
    assert "nested deeper than 64" in lumina_door.json()["error"]["message"]
    assert _conversation_count(server, owner) == 0


def test_a_nested_string_is_not_nesting(server: AppServer, owner: str) -> None:
    """Brackets, quotes and escapes inside strings do not count."""
    text = '[[[[{{{{ \\" ' * 200 + "what is 2+2?"
    answer = _sdk(server, owner).responses.create(model="assistant", input=text)
    assert answer.status == "completed"


def test_validation_messages_carry_no_object_reprs(server: AppServer, owner: str) -> None:
    with _http(server, owner) as http:
        empty = http.post("/v1/responses", json={"model": "assistant", "input": ""})
        listed = http.post("/v1/responses", json={"model": "assistant", "input": []})
    for refused in (empty, listed):
        assert refused.status_code == 400, refused.text
        message = refused.json()["error"]["message"]
        assert "<function" not in message and " at 0x" not in message
        assert "function-after" not in message and message.startswith("input")


# -- what is deleted is gone (finding 7, idempotency) -------------------------------------


def test_a_retry_after_the_response_is_deleted_is_a_new_request(
    server: AppServer, owner: str
) -> None:
    sdk = _sdk(server, owner)
    key = {"Idempotency-Key": "retry-" + owner}
    first = sdk.responses.create(model="assistant", input="Hello there", extra_headers=key)
    again = sdk.responses.create(model="assistant", input="Hello there", extra_headers=key)
    assert again.id == first.id  # replayed while it exists
    sdk.responses.delete(first.id)
    after = sdk.responses.create(model="assistant", input="Hello there", extra_headers=key)
    assert after.id != first.id
    with pytest.raises(openai.NotFoundError):
        sdk.responses.retrieve(first.id)


def test_a_retry_after_the_conversation_is_deleted_is_a_new_request(
    server: AppServer, owner: str
) -> None:
    sdk = _sdk(server, owner)
    key = {"Idempotency-Key": "conv-" + owner}
    first = sdk.responses.create(model="assistant", input="Hi, again", extra_headers=key)
    sdk.conversations.delete(first.conversation.id)
    after = sdk.responses.create(model="assistant", input="Hi, again", extra_headers=key)
    assert after.id != first.id and after.conversation.id != first.conversation.id
    assert _rows(server, owner, after.conversation.id)[0] == ("USER", "Hi, again")


def test_an_expired_record_is_not_replayed_and_is_swept(server: AppServer, owner: str) -> None:
    sdk = _sdk(server, owner)
    key = {"Idempotency-Key": "old-" + owner}
    first = sdk.responses.create(model="assistant", input="An old question", extra_headers=key)
    day_ago = "UPDATE lumina_idempotency SET created_at = :at WHERE owner = :owner"
    _sql(server, day_ago, at=utcnow() - timedelta(hours=25), owner=owner)
    after = sdk.responses.create(model="assistant", input="An old question", extra_headers=key)
    assert after.id != first.id
    # The operator's sweep deletes what is past its time (here: the record aged again).
    _sql(server, day_ago, at=utcnow() - timedelta(hours=25), owner=owner)
    assert "Deleted 1 expired idempotency record(s)" in server.cli("sweep")


# -- quotas per owner (finding 8) ---------------------------------------------------------


def test_the_conversation_quota_refuses_with_429_naming_it(server: AppServer, owner: str) -> None:
    sdk = _sdk(server, owner)
    with _http(server, owner) as http:
        for _ in range(MAX_CONVERSATIONS - 1):
            made = http.post("/api/v1/conversations", json={"agentId": "assistant"})
            assert made.status_code == 201, made.text
        sdk.conversations.create()  # the last one allowed, by the OpenAI door
        refused = http.post("/api/v1/conversations", json={"agentId": "assistant"})
        assert refused.status_code == 429, refused.text
        assert "LUMINA_MAX_CONVERSATIONS_PER_OWNER" in refused.json()["error"]["message"]
        chat = http.post("/api/agent/assistant/chat", json={"message": "hello"})
        assert chat.status_code == 429, chat.text  # family B, as every door
    with pytest.raises(openai.RateLimitError) as limited:
        sdk.responses.create(model="assistant", input="one more")
    assert f"the limit is {MAX_CONVERSATIONS}" in limited.value.message
    assert _conversation_count(server, owner) == MAX_CONVERSATIONS


def test_the_daily_message_quota_refuses_with_429_naming_it(server: AppServer, owner: str) -> None:
    sdk = _sdk(server, owner)
    first = sdk.responses.create(model="assistant", input="Count with me: 1")
    conversation = first.conversation.id
    for n in range(2, MAX_MESSAGES_PER_DAY // 2 + 1):
        sdk.responses.create(model="assistant", conversation=conversation, input=f"{n}")
    stored = _rows(server, owner, conversation)
    assert len(stored) == MAX_MESSAGES_PER_DAY
    with pytest.raises(openai.RateLimitError) as limited:
        sdk.responses.create(model="assistant", conversation=conversation, input="and more")
    assert "LUMINA_MAX_MESSAGES_PER_OWNER_PER_DAY" in limited.value.message
    assert int(limited.value.response.headers["Retry-After"]) > 0
    with pytest.raises(openai.RateLimitError):
        sdk.conversations.items.create(
            conversation, items=[{"type": "message", "role": "user", "content": "slipped in"}]
        )
    assert _rows(server, owner, conversation) == stored


def test_nesting_is_counted_across_chunks_and_strings() -> None:
    """The counter sees a body as it arrives: a chunk may end inside a string or between
    an escape's backslash and the quote it escapes."""
    from lumina_app.api.limits import _Nesting, _TooDeep

    inside = b'{"a": "[[[[\\"{{{{", "b": [[1]]}'
    for cut in range(len(inside) + 1):
        nesting = _Nesting(3)
        nesting.feed(inside[:cut])
        nesting.feed(inside[cut:])
        assert nesting.depth == 0 and not nesting.in_string
    deep = b'{"x": [[[1]]]}'
    for cut in range(len(deep) + 1):
        nesting = _Nesting(3)
        with pytest.raises(_TooDeep):
            nesting.feed(deep[:cut])
            nesting.feed(deep[cut:])


async def test_the_apps_own_depth_limit_is_the_one_applied(api_factory) -> None:
    """The API built with its own settings applies their LUMINA_MAX_JSON_DEPTH, as it does
    their body size and read timeout (it read the process's settings instead)."""
    _services, api = await api_factory(max_json_depth=10)
    deep: object = {"leaf": 1}
    for _ in range(20):
        deep = {"x": deep}
    resp = await api.post("/api/v1/conversations", json={"agentId": "demo", "x": deep})
    assert resp.status_code == 422, resp.text
    assert "nested deeper than 10" in resp.json()["error"]["message"]
    shallow = await api.post("/api/v1/conversations", json={"agentId": "demo"})
    assert shallow.status_code == 201, shallow.text
