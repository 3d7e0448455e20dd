"""A question's images reach an acp agent as ACP image blocks (#48, docs/FILES.md "To the
model"): when its folder says ``"vision": true`` and its process says at ``initialize``
that prompts may carry images; otherwise it reads ``[image: name]`` in the text. Seen by the
echo agent, which names each image block it gets by type and digest, through HTTP on
SQLite, MariaDB and PostgreSQL."""

from __future__ import annotations

import base64
import hashlib

import pytest

from tests.acp.helpers import echo_agent
from tests.api.conftest import api_factory  # noqa: F401 - fixture
from tests.api.helpers import openai_sdk
from tests.api.test_files import png, uploaded
from tests.api.test_message_files_model import ask, inspected

KEYS = "alice:ka"


@pytest.fixture
async def api(api_factory, database, data_dir):  # noqa: F811
    echo_agent(data_dir, "seer", config={"vision": True}, env={"ECHO_AGENT_IMAGES": "1"})
    echo_agent(data_dir, "blind", config={"vision": True})  # its process takes text only
    echo_agent(data_dir, "plain", env={"ECHO_AGENT_IMAGES": "1"})  # its folder says no vision
    _services, client = await api_factory(database_url=database.url, api_keys=KEYS)
    return client


HTTP_URL = "http://127.0.0.1:9/cat.png"  # nothing listens there: it must not be fetched


async def sent_files(api, run_id: str) -> list[str]:
    return [f["sent"] for f in (await inspected(api, run_id))["files"]]


def tag(data: bytes) -> str:
    return f"image=image/png:{hashlib.sha256(data).hexdigest()[:12]}"


async def test_an_image_reaches_a_vision_acp_agent_as_an_image_block(api) -> None:
    pixel, other = png(3, 2), png(4, 4)
    first = await uploaded(api, "pixel.png", pixel)
    second = await uploaded(api, "other.png", other)
    done = await ask(api, "seer", "/echo What is in them?", [first["id"], second["id"]])
    assert tag(pixel) in done["answer"] and tag(other) in done["answer"]  # the bytes, as sent
    assert "/echo What is in them?' " in done["answer"]  # the text ends with the question
    assert "[image:" not in done["answer"]
    assert await sent_files(api, done["runId"]) == ["image", "image"]
    # The next turn goes to the live session, which holds the images: they are not sent again.
    again = await ask(api, "seer", "/echo And now?", [], done["conversationId"])
    assert "image=" not in again["answer"]
    assert "text='/echo And now?'" in again["answer"]


@pytest.mark.parametrize("agent", ["blind", "plain"])
async def test_an_agent_that_does_not_take_images_reads_their_names(api, agent) -> None:
    pixel = png(2, 2)
    image = await uploaded(api, "shot.png", pixel)
    done = await ask(api, agent, "/echo What is it?", [image["id"]])
    assert "image=" not in done["answer"]
    assert "[image: shot.png]" in done["answer"]
    assert await sent_files(api, done["runId"]) == ["placeholder"]


async def test_the_responses_apis_images_reach_an_acp_agent(api) -> None:
    pixel = png(5, 1)
    url = "data:image/png;base64," + base64.b64encode(pixel).decode()
    asking = [
        {"role": "user", "content": [
            {"type": "input_text", "text": "/echo Which?"},
            {"type": "input_image", "image_url": url},
            {"type": "input_image", "image_url": HTTP_URL},
        ]},
    ]  # fmt: skip
    async with openai_sdk(api, "ka") as sdk:
        seen = await sdk.responses.create(model="seer", input=asking)
        told = await sdk.responses.create(model="blind", input=asking)
    assert tag(pixel) in seen.output_text and f"link={HTTP_URL}" in seen.output_text
    # A process that takes no images: the stored one by name, the linked one as [image].
    assert "image=" not in told.output_text and "link=" not in told.output_text
    assert "[image: " in told.output_text and "[image]" in told.output_text
