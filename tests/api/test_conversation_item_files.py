"""Images and files in the Conversations API's items (#48), with the real ``openai`` SDK on
every database: a user item's ``input_image`` (data URL or ``file_id``) and ``input_file``
(``file_data`` or ``file_id``) become the owner's files, linked to its message; the items
list names them by ``file_id``; the next response's model (tests/fake_llm.py, recording)
gets them from the history; deleting the conversation deletes them. Another owner's file
id, a file over the limit: a clean 4xx and nothing stored."""

from __future__ import annotations

import base64

import openai
import pytest

from tests.api.helpers import bearer, messages, openai_sdk
from tests.api.test_files import png, uploaded
from tests.conftest import write_agent

KEYS = "ada:key-ada,bob:key-bob"
ADA, BOB = bearer("key-ada"), bearer("key-bob")
IMAGE = png(5, 3)
SPEC = b"# Spec\n\nThe retry budget is SEVEN attempts.\n"


def data_url(data: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(data).decode()


@pytest.fixture
async def opened(api_factory, database, data_dir, fake_llm):
    model = {"provider": "openai", "base_url": fake_llm.base_url, "model": "fake-vision"}
    write_agent(data_dir / "agents", "seer", {"name": "Seer", "vision": True, **model})
    _services, client = await api_factory(
        database_url=database.url, api_keys=KEYS, max_file_bytes=64 * 1024
    )
    async with openai_sdk(client, "key-ada") as sdk:
        yield client, sdk


async def _file_ids(api, headers=ADA) -> set[str]:
    resp = await api.get("/api/v1/files", params={"limit": 100}, headers=headers)
    assert resp.status_code == 200, resp.text
    return {f["id"] for f in resp.json()["items"]}


async def test_items_keep_their_files_and_the_model_gets_them(opened, fake_llm) -> None:
    api, sdk = opened
    conversation = await sdk.conversations.create(
        metadata={"agent": "seer"},
        items=[{"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "Here is the spec."},
            {"type": "input_file", "filename": "spec.md",
             "file_data": base64.b64encode(SPEC).decode()},
        ]}, {"type": "message", "role": "assistant", "content": "Noted."}],
    )  # fmt: skip
    shot = await uploaded(api, "shot.png", IMAGE, headers=ADA)
    await sdk.conversations.items.create(
        conversation.id,
        items=[{"type": "message", "role": "user", "content": [
            {"type": "input_image", "image_url": data_url(png(2, 2))},
            {"type": "input_image", "file_id": shot["id"]},
        ]}],
    )  # fmt: skip
    listed = await api.get(f"/v1/conversations/{conversation.id}/items?order=asc", headers=ADA)
    items = listed.json()["data"]
    spec_part = items[0]["content"][1]
    assert spec_part["type"] == "input_file" and spec_part["filename"] == "spec.md"
    assert [p["type"] for p in items[2]["content"]] == ["input_image", "input_image"]
    assert items[2]["content"][1]["file_id"] == shot["id"]
    spec = await api.get(f"/api/v1/files/{spec_part['file_id']}", headers=ADA)
    assert spec.content == SPEC  # the bytes, as sent
    uuid = conversation.id.removeprefix("conv_")
    stored = await messages(api, uuid, headers=ADA)
    assert [f["name"] for f in stored[0]["files"]] == ["spec.md"]

    answer = await sdk.responses.create(
        model="seer", conversation=conversation.id, input="What is the retry budget?"
    )
    assert answer.status == "completed"
    sent = [m for m in fake_llm.requests[-1]["messages"] if m["role"] == "user"]
    assert "[file: spec.md]" in sent[0]["content"] and "SEVEN attempts" in sent[0]["content"]
    urls = [p["image_url"]["url"] for p in sent[1]["content"] if p["type"] == "image_url"]
    assert [base64.b64decode(u.partition(",")[2]) for u in urls] == [png(2, 2), IMAGE]

    before = await _file_ids(api)
    assert {spec_part["file_id"], shot["id"]} <= before
    await sdk.conversations.delete(conversation.id)
    assert not {spec_part["file_id"], shot["id"]} & await _file_ids(api)  # gone with it
    gone = await api.get(f"/api/v1/files/{spec_part['file_id']}", headers=ADA)
    assert gone.status_code == 404


async def test_refused_items_store_nothing(opened) -> None:
    api, sdk = opened
    conversation = await sdk.conversations.create(metadata={"agent": "seer"})
    theirs = await uploaded(api, "theirs.png", IMAGE, headers=BOB)
    big = base64.b64encode(b"x" * (65 * 1024)).decode()
    for part, refused in (
        ({"type": "input_image", "file_id": theirs["id"]}, openai.NotFoundError),
        ({"type": "input_file", "filename": "big.txt", "file_data": big}, openai.APIStatusError),
    ):
        items = [{"type": "message", "role": "user", "content": [
            {"type": "input_image", "image_url": data_url(png(3, 3))}, part,
        ]}]  # fmt: skip
        with pytest.raises(refused) as caught:
            await sdk.conversations.items.create(conversation.id, items=items)
        assert 400 <= caught.value.status_code < 500
        with pytest.raises(refused):
            await sdk.conversations.create(metadata={"agent": "seer"}, items=items)
    assert await _file_ids(api) == set()  # the image uploaded before each refusal went again
    listed = await sdk.conversations.items.list(conversation.id)
    assert listed.data == []
    assert theirs["id"] in await _file_ids(api, BOB)  # Bob's file is untouched
