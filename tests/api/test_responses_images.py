"""Image input through the Responses API (``input_image`` parts), with the real ``openai``
SDK on the in-process app: a text-only agent (the demo model; an OpenAI-compatible one not
marked ``"vision": true``) refuses them with a 400 in OpenAI's shape naming why; a vision
agent's model (tests/fake_llm.py, which records what it was sent) gets them as chat
``image_url`` parts after the question's text — a data: URL stored as a file of the question
(#48, tests/api/test_gateway_files.py) and sent from it, an http URL as given, never
fetched and for that run only. Too many or too large: 413."""

from __future__ import annotations

import base64

import openai
import pytest

from tests.api.helpers import openai_sdk
from tests.conftest import write_agent

KEYS = "ada:key-ada"
PNG = "data:image/png;base64," + base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 64).decode()
HTTP_URL = "http://127.0.0.1:9/cat.png"  # nothing listens there: it must not be fetched


def _asking(*images: dict, text: str = "What is in this picture?") -> list[dict]:
    return [{"role": "user", "content": [{"type": "input_text", "text": text}, *images]}]


def _image(url: str, **extra) -> dict:
    return {"type": "input_image", "image_url": url, **extra}


@pytest.fixture
async def sdk(api_factory, data_dir, fake_llm):
    model = {"provider": "openai", "base_url": fake_llm.base_url, "model": "fake-vision"}
    write_agent(data_dir / "agents", "seer", {"name": "Seer", "vision": True, **model})
    _services, client = await api_factory(
        api_keys=KEYS, responses_max_images=2, responses_max_image_chars=4096
    )
    async with openai_sdk(client, "key-ada") as opened:
        yield opened


async def test_a_text_only_agent_refuses_images(sdk: openai.AsyncOpenAI, fake_llm) -> None:
    for agent in ("demo", "tester"):
        with pytest.raises(openai.BadRequestError) as refused:
            await sdk.responses.create(model=agent, input=_asking(_image(PNG)))
        error = refused.value.body
        assert error["code"] == "image_input_unsupported"
        assert "text-only" in error["message"] and agent in error["message"]
    assert fake_llm.requests == []  # nothing was run
    with pytest.raises(openai.BadRequestError):  # streamed: refused before the stream
        await sdk.responses.create(model="demo", input=_asking(_image(PNG)), stream=True)


async def test_a_vision_agent_gets_the_image_parts(sdk: openai.AsyncOpenAI, fake_llm) -> None:
    answer = await sdk.responses.create(
        model="seer", input=_asking(_image(PNG, detail="low"), _image(HTTP_URL))
    )
    assert answer.status == "completed" and answer.output_text
    question = fake_llm.requests[-1]["messages"][-1]
    # The data URL is stored as a file of the question (#48) and sent from it (its bytes
    # again, without the detail); the http URL is passed on for this run, as given.
    assert question == {
        "role": "user",
        "content": [
            {"type": "text", "text": "What is in this picture?"},
            {"type": "image_url", "image_url": {"url": PNG}},
            {"type": "image_url", "image_url": {"url": HTTP_URL}},
        ],
    }
    # The next turn: the stored image stays with its question, the http one was that
    # turn's only.
    await sdk.responses.create(model="seer", input="And now?", previous_response_id=answer.id)
    sent = fake_llm.requests[-1]["messages"]
    assert [m["content"] for m in sent if m["role"] == "user"] == [
        [
            {"type": "text", "text": "What is in this picture?"},
            {"type": "image_url", "image_url": {"url": PNG}},
        ],
        "And now?",
    ]


@pytest.mark.parametrize(
    "part",
    [
        {"type": "input_image"},
        {"type": "input_image", "file_id": "file-123"},
        {"type": "input_image", "image_url": "file:///etc/passwd"},
        {"type": "input_image", "image_url": "ftp://example.com/x.png"},
        {"type": "input_file", "file_id": "file-1"},
    ],
)
async def test_malformed_image_parts_are_a_400(sdk: openai.AsyncOpenAI, part: dict) -> None:
    with pytest.raises(openai.BadRequestError) as refused:
        await sdk.responses.create(model="seer", input=_asking(part))
    assert refused.value.body["type"] == "invalid_request_error"
    # The reason is named (among the union's other branches' complaints).
    assert f"{part['type']}: " in refused.value.message


async def test_too_many_or_too_large_images_are_a_413(sdk: openai.AsyncOpenAI) -> None:
    with pytest.raises(openai.APIStatusError) as many:
        await sdk.responses.create(model="seer", input=_asking(*[_image(PNG)] * 3))
    assert many.value.status_code == 413 and "at most 2 images" in many.value.message
    long_url = HTTP_URL + "?" + "a" * 5000  # a data URL is stored: a file's limits apply
    with pytest.raises(openai.APIStatusError) as large:
        await sdk.responses.create(model="seer", input=_asking(_image(long_url)))
    assert large.value.status_code == 413 and "4096 characters" in large.value.message
