"""What the model is sent of a question's files (#48; docs/FILES.md, "To the model"), seen
by a stand-in OpenAI-compatible model that records its requests (tests/fake_llm.py): an
image as an ``image_url`` data-URL part for a ``"vision": true`` agent (every question in
the window, not only the newest), ``[image: name]`` for a text-only one; a document's text
as a block in the question, cut with a marker to the token budget; the context inspector
showing what of each file was sent, and rebuilding the same messages. On SQLite, MariaDB
and PostgreSQL, through HTTP."""

from __future__ import annotations

import base64

import pytest

from lumina_app.domain.tokens import estimate_messages
from tests.api.helpers import bearer
from tests.api.test_files import png, uploaded
from tests.conftest import write_agent
from tests.pdf_bytes import text_pdf

KEYS = "alice:ka"
ALICE = bearer("ka")
BUDGET = 900  # the tight agent's memory.contextTokens


@pytest.fixture
async def opened(api_factory, database, data_dir, fake_llm):
    model = {"provider": "openai", "base_url": fake_llm.base_url, "model": "fake-1"}
    agents = data_dir / "agents"
    write_agent(agents, "seer", {"name": "Seer", "vision": True, **model})
    write_agent(agents, "plain", {"name": "Plain", **model})
    write_agent(agents, "tight", {"name": "Tight", "memory": {"contextTokens": BUDGET}, **model})
    return await api_factory(database_url=database.url, api_keys=KEYS)


@pytest.fixture
def api(opened):
    return opened[1]


async def ask(api, agent: str, task: str, files: list[str], conversation: str | None = None):
    body = {"task": task, "files": files, "conversationId": conversation}
    resp = await api.post(f"/api/v1/agents/{agent}/execute/sync", json=body, headers=ALICE)
    assert resp.status_code == 200, resp.text
    assert resp.json()["status"] == "complete", resp.json()
    return resp.json()


async def inspected(api, run_id: str) -> dict:
    resp = await api.get(f"/api/v1/runs/{run_id}/context", headers=ALICE)
    assert resp.status_code == 200, resp.text
    return resp.json()


def data_url(content: list[dict]) -> bytes:
    """The bytes of the one image part of a question's content."""
    (image,) = [p for p in content if p["type"] == "image_url"]
    head, _, data = image["image_url"]["url"].partition(",")
    assert head == "data:image/png;base64"
    return base64.b64decode(data)


async def test_an_image_reaches_a_vision_agent_and_a_text_agent_gets_its_name(
    api, fake_llm
) -> None:
    pixel = png(3, 2)
    image = await uploaded(api, "pixel.png", pixel)
    seen = await ask(api, "seer", "What is in it?", [image["id"]])
    question = fake_llm.requests[-1]["messages"][-1]
    assert question["role"] == "user" and question["content"][0] == {
        "type": "text",
        "text": "What is in it?",
    }
    assert data_url(question["content"]) == pixel  # the bytes, as uploaded
    context = await inspected(api, seen["runId"])
    assert context["files"] == [
        {"id": image["id"], "name": "pixel.png", "type": "image/png", "sent": "image"}
        | {"chars": 0, "of": 0}
    ]
    assert context["messages"] == fake_llm.requests[-1]["messages"]  # rebuilt the same

    told = await ask(api, "plain", "What is in it?", [image["id"]])
    question = fake_llm.requests[-1]["messages"][-1]
    assert question == {"role": "user", "content": "What is in it?\n\n[image: pixel.png]"}
    context = await inspected(api, told["runId"])
    assert [f["sent"] for f in context["files"]] == ["placeholder"]
    assert context["messages"] == fake_llm.requests[-1]["messages"]


@pytest.mark.parametrize("warm", [True, False])
async def test_the_next_turn_still_carries_the_first_turns_image(opened, fake_llm, warm) -> None:
    services, api = opened
    pixel = png(2, 2)
    image = await uploaded(api, "first.png", pixel)
    first = await ask(api, "seer", "Look at this.", [image["id"]])
    if not warm:  # no warm session: the context is read from the hot window (Redis)
        services.chat.sessions.drop("seer", first["conversationId"])
    second = await ask(api, "seer", "And what colour was it?", [], first["conversationId"])
    assert (await inspected(api, second["runId"]))["scenario"] == ("continue" if warm else "resume")
    sent = fake_llm.requests[-1]["messages"]
    questions = [m for m in sent if m["role"] == "user"]
    assert data_url(questions[0]["content"]) == pixel  # the window's question, with its image
    assert questions[1] == {"role": "user", "content": "And what colour was it?"}


async def test_a_documents_text_reaches_the_context(api, fake_llm) -> None:
    notes = await uploaded(api, "notes.md", b"# Build\n\nThe deploy key is ORCHID-7.\n")
    done = await ask(api, "plain", "What is the key?", [notes["id"]])
    question = fake_llm.requests[-1]["messages"][-1]
    text = "# Build\n\nThe deploy key is ORCHID-7.\n"
    assert question["content"] == (
        f"What is the key?\n\n[file: notes.md]\n{text}\n[end of file: notes.md]"
    )
    context = await inspected(api, done["runId"])
    assert context["files"] == [
        {"id": notes["id"], "name": "notes.md", "type": "text/markdown", "sent": "text"}
        | {"chars": len(text), "of": len(text)}
    ]
    assert context["messages"] == fake_llm.requests[-1]["messages"]


async def test_a_long_document_is_cut_with_a_marker_within_the_budget(api, fake_llm) -> None:
    body = "".join(f"line {n}: the quick brown fox jumps over the lazy dog\n" for n in range(800))
    long = await uploaded(api, "long.log", body.encode())
    short = await uploaded(api, "short.txt", b"a short note\n")
    done = await ask(api, "tight", "Summarise.", [long["id"], short["id"]])
    sent = fake_llm.requests[-1]["messages"]
    content = sent[-1]["content"]
    assert content.startswith("Summarise.\n\n[file: long.log]\nline 0: the quick")
    context = await inspected(api, done["runId"])
    first, second = context["files"]
    assert first["sent"] == "text" and 0 < first["chars"] < first["of"] == len(body)
    assert f"[… cut: {first['chars']} of {len(body)} characters sent]" in content
    assert content.index("[end of file: long.log]") > content.index("[… cut:")
    # the first file took the room; the second has what is left, its name at least
    assert content.index("[end of file: long.log]") < content.index("[file: short.txt]")
    assert second["name"] == "short.txt" and second["sent"] in ("text", "placeholder")
    assert estimate_messages(sent) <= BUDGET and context["tokens"] <= BUDGET
    assert context["messages"] == sent


async def test_a_pdfs_text_reaches_the_context(api, fake_llm) -> None:
    spec = await uploaded(api, "spec.pdf", text_pdf("The quarterly spec", "Budget: wombat"))
    done = await ask(api, "plain", "What is the budget?", [spec["id"]])
    content = fake_llm.requests[-1]["messages"][-1]["content"]
    assert content.startswith("What is the budget?\n\n[file: spec.pdf]\n")
    assert "The quarterly spec" in content and "Budget: wombat" in content
    assert content.endswith("\n[end of file: spec.pdf]")
    (sent,) = (await inspected(api, done["runId"]))["files"]
    assert sent["sent"] == "text" and sent["chars"] == sent["of"] > 0


async def test_a_question_of_files_alone_stays_in_the_next_turns_context(api, fake_llm) -> None:
    """A message may be files alone; the next turn's history still carries it (it was
    left out as an empty message)."""
    pixel = png(3, 3)
    image = await uploaded(api, "alone.png", pixel)
    first = await ask(api, "seer", "", [image["id"]])
    await ask(api, "seer", "And that picture?", [], first["conversationId"])
    questions = [m for m in fake_llm.requests[-1]["messages"] if m["role"] == "user"]
    assert len(questions) == 2
    assert data_url(questions[0]["content"]) == pixel
