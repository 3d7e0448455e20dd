"""Files through the OpenAI doors (#48), with the real ``openai`` SDK on every database: a
chat-completions ``image_url`` data URL and a Responses ``input_image`` (data URL or
``file_id``) or ``input_file`` (``file_id`` or ``file_data``) become the owner's files,
attached to the stored question; a vision agent's model (tests/fake_llm.py, recording)
gets the image's bytes as an image part. A text-only agent refuses images with the same
400 at both doors; HTML in a ``data:image/png`` URL is a clean 4xx; another owner's file
id a 404 — each with nothing stored."""

from __future__ import annotations

import base64
import hashlib

import openai
import pytest

from tests.api.helpers import bearer, messages, openai_sdk
from tests.api.test_files import png, uploaded
from tests.conftest import write_agent

KEYS = "ada:key-ada,bob:key-bob"
ADA, BOB = bearer("key-ada"), bearer("key-bob")
IMAGE = png(4, 3)
NOTES = b"The launch code word is HELIOTROPE.\n"


def data_url(data: bytes, kind: str = "image/png") -> str:
    return f"data:{kind};base64," + base64.b64encode(data).decode()


@pytest.fixture
async def opened(api_factory, database, data_dir, fake_llm):
    model = {"provider": "openai", "base_url": fake_llm.base_url, "model": "fake-vision"}
    write_agent(data_dir / "agents", "seer", {"name": "Seer", "vision": True, **model})
    services, client = await api_factory(database_url=database.url, api_keys=KEYS)
    async with openai_sdk(client, "key-ada") as sdk:
        yield services, client, sdk


async def _files(api, headers=ADA) -> list[dict]:
    resp = await api.get("/api/v1/files", params={"limit": 100}, headers=headers)
    assert resp.status_code == 200, resp.text
    return resp.json()["items"]


def _images_sent(fake_llm) -> list[bytes]:
    """The bytes of the image parts the model got in the question (data URLs)."""
    question = fake_llm.requests[-1]["messages"][-1]
    assert question["role"] == "user" and isinstance(question["content"], list), question
    urls = [p["image_url"]["url"] for p in question["content"] if p["type"] == "image_url"]
    return [base64.b64decode(url.partition(";base64,")[2]) for url in urls]


async def test_chat_completions_image_reaches_the_model_and_stays(opened, fake_llm) -> None:
    _services, api, sdk = opened
    raw = await sdk.chat.completions.with_raw_response.create(
        model="seer",
        messages=[
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is in this picture?"},
                    {"type": "image_url", "image_url": {"url": data_url(IMAGE)}},
                ],
            }
        ],
    )
    completion = raw.parse()
    assert completion.choices[0].message.content
    assert _images_sent(fake_llm) == [IMAGE]
    conversation = raw.headers["x-lumina-conversation-id"]
    question = (await messages(api, conversation, headers=ADA))[0]
    assert question["content"] == "What is in this picture?"
    [attached] = question["files"]
    assert (attached["type"], attached["size"], attached["name"]) == (
        "image/png",
        len(IMAGE),
        "image-1.png",
    )
    body = await api.get(f"/api/v1/files/{attached['id']}", headers=ADA)
    assert body.content == IMAGE
    # an image alone is a question too
    image_only = [{"type": "image_url", "image_url": {"url": data_url(IMAGE)}}]
    first = [{"role": "user", "content": image_only}]
    alone = await sdk.chat.completions.with_raw_response.create(model="seer", messages=first)
    reply = alone.parse().choices[0].message.content
    assert reply and _images_sent(fake_llm) == [IMAGE]
    stored = len(await _files(api))
    # a client that resends the whole history: the image-only question is matched, the
    # conversation goes on, and its image is not stored again
    resent = [*first, {"role": "assistant", "content": reply}, {"role": "user", "content": "And?"}]
    again = await sdk.chat.completions.with_raw_response.create(model="seer", messages=resent)
    same = again.headers["x-lumina-conversation-id"]
    assert same == alone.headers["x-lumina-conversation-id"] != conversation
    assert len(await _files(api)) == stored
    assert [m["content"] for m in await messages(api, same, headers=ADA)][::2] == ["", "And?"]


async def test_chat_completions_refusals_store_nothing(opened, fake_llm) -> None:
    _services, api, sdk = opened

    def asking(url: str) -> list[dict]:
        return [{"role": "user", "content": [
            {"type": "text", "text": "Look"}, {"type": "image_url", "image_url": {"url": url}}
        ]}]  # fmt: skip

    with pytest.raises(openai.BadRequestError) as text_only:
        await sdk.chat.completions.create(model="demo", messages=asking(data_url(IMAGE)))
    assert text_only.value.body["code"] == "image_input_unsupported"
    assert "text-only" in text_only.value.message
    html = b"<!doctype html><html><script>alert(1)</script></html>"
    polyglot = IMAGE + b"<script>alert(1)</script>"
    for bad in (html, polyglot):
        with pytest.raises(openai.APIStatusError) as refused:
            await sdk.chat.completions.create(model="seer", messages=asking(data_url(bad)))
        assert refused.value.status_code == 415, refused.value.message
    with pytest.raises(openai.APIStatusError) as pdf_as_image:
        await sdk.chat.completions.create(
            model="seer", messages=asking(data_url(b"%PDF-1.4\n%%EOF\n"))
        )
    assert pdf_as_image.value.status_code == 415 and "not an image" in pdf_as_image.value.message
    for broken in ("data:image/png;base64,@@@", "data:image/png,plain", "ftp://x/y.png"):
        with pytest.raises(openai.BadRequestError):
            await sdk.chat.completions.create(model="seer", messages=asking(broken))
    assert await _files(api) == []  # nothing stored by any of them
    assert fake_llm.requests == []  # and nothing run
    listed = await api.get("/api/v1/conversations", headers=ADA)
    assert listed.json()["items"] == []


async def test_responses_images_and_files_are_attached(opened, fake_llm) -> None:
    _services, api, sdk = opened
    picture = await uploaded(api, "shot.png", IMAGE, headers=ADA)
    notes = await uploaded(api, "notes.txt", NOTES, headers=ADA)
    other = png(2, 2)
    answer = await sdk.responses.create(
        model="seer",
        input=[{"role": "user", "content": [
            {"type": "input_text", "text": "Compare these"},
            {"type": "input_image", "file_id": picture["id"]},
            {"type": "input_image", "image_url": data_url(other)},
            {"type": "input_file", "file_id": notes["id"]},
            {"type": "input_file", "filename": "more.md",
             "file_data": base64.b64encode(b"# More\n\nsecond file\n").decode()},
        ]}],
    )  # fmt: skip
    assert answer.status == "completed"
    assert _images_sent(fake_llm) == [IMAGE, other]
    conversation = answer.metadata["lumina_conversation_id"]
    question = (await messages(api, conversation, headers=ADA))[0]
    files = question["files"]
    assert [(f["name"], f["type"]) for f in files] == [
        ("shot.png", "image/png"),
        ("image-2.png", "image/png"),
        ("notes.txt", "text/plain"),
        ("more.md", "text/markdown"),
    ]
    assert files[0]["id"] == picture["id"] and files[2]["id"] == notes["id"]
    more = await api.get(f"/api/v1/files/{files[3]['id']}", headers=ADA)
    assert more.content == b"# More\n\nsecond file\n"
    sha = hashlib.sha256((await api.get(f"/api/v1/files/{files[1]['id']}", headers=ADA)).content)
    assert sha.hexdigest() == hashlib.sha256(other).hexdigest()


async def test_responses_refusals(opened, fake_llm) -> None:
    _services, api, sdk = opened
    bobs = await uploaded(api, "bob.png", IMAGE, headers=BOB)
    bobs_notes = await uploaded(api, "bob.txt", NOTES, headers=BOB)
    for part in (
        {"type": "input_image", "file_id": bobs["id"]},
        {"type": "input_file", "file_id": bobs_notes["id"]},
        {"type": "input_image", "file_id": "file-" + "0" * 24},
    ):
        with pytest.raises(openai.NotFoundError):
            await sdk.responses.create(
                model="seer",
                input=[{"role": "user", "content": [{"type": "input_text", "text": "x"}, part]}],
            )
    mine = await uploaded(api, "notes.txt", NOTES, headers=ADA)
    with pytest.raises(openai.APIStatusError) as not_image:
        await sdk.responses.create(
            model="seer",
            input=[{"role": "user", "content": [{"type": "input_image", "file_id": mine["id"]}]}],
        )
    assert not_image.value.status_code == 415 and "not an image" in not_image.value.message
    with pytest.raises(openai.BadRequestError) as text_only:
        await sdk.responses.create(
            model="demo",
            input=[{"role": "user", "content": [{"type": "input_image", "file_id": mine["id"]}]}],
        )
    assert text_only.value.body["code"] == "image_input_unsupported"
    for part in (
        {"type": "input_file", "file_data": "aGVsbG8="},  # no filename
        {"type": "input_file", "file_url": "https://example.com/a.pdf"},
        {"type": "input_file", "filename": "x.txt", "file_data": "@@not base64@@"},
    ):
        with pytest.raises(openai.BadRequestError):
            await sdk.responses.create(
                model="seer",
                input=[{"role": "user", "content": [{"type": "input_text", "text": "x"}, part]}],
            )
    assert [f["id"] for f in await _files(api)] == [mine["id"]]  # nothing else stored
    assert fake_llm.requests == []


async def test_a_run_that_cannot_start_keeps_no_upload(opened, fake_llm) -> None:
    """A 409 (a run already answering in the conversation): the image this request
    uploaded is deleted again; the caller's own earlier files stay."""
    _services, api, sdk = opened
    kept = await uploaded(api, "kept.txt", NOTES, headers=ADA)
    fake_llm.script.hold = lambda body: True
    started = await api.post(
        "/api/v1/agents/seer/execute", json={"task": "take your time"}, headers=ADA
    )
    assert started.status_code == 202, started.text
    conversation = started.json()["conversationId"]
    try:
        content = [
            {"type": "text", "text": "and this?"},
            {"type": "image_url", "image_url": {"url": data_url(IMAGE)}},
        ]
        with pytest.raises(openai.ConflictError):
            await sdk.chat.completions.create(
                model="seer",
                messages=[{"role": "user", "content": content}],
                extra_headers={"X-Lumina-Conversation-Id": conversation},
            )
        assert [f["id"] for f in await _files(api)] == [kept["id"]]
    finally:
        fake_llm.release.set()
