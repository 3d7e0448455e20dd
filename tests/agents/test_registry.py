"""Agent folders: read once, re-read after an edit (within the recheck interval), a broken
config makes the agent unavailable with the reason, a removed folder is gone."""

from lumina_app.agents.definitions.registry import AgentRegistry
from tests.conftest import write_agent


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_prompts_are_joined_in_order_and_edits_show_after_the_recheck(tmp_path) -> None:
    write_agent(
        tmp_path,
        "helper",
        {"name": "Helper", "provider": "demo", "temperature": 0.5, "color": "teal"},
        {"soul.md": "Be kind.", "agent.md": "You help.", "tools.md": "  "},
    )
    clock = Clock()
    registry = AgentRegistry(tmp_path, recheck_seconds=1.0, clock=clock)
    agent = registry.get("helper")
    assert agent is not None and agent.available
    assert (agent.name, agent.temperature) == ("Helper", 0.5)
    assert agent.system_prompt == "You help.\n\nBe kind."  # agent.md first; blank files skipped
    assert agent.extra == {"color": "teal"}  # unknown keys kept for the provider

    write_agent(tmp_path, "helper", {"name": "Renamed"}, {"agent.md": "You help a lot."})
    clock.now += 0.5
    assert registry.get("helper").name == "Helper"  # not looked at again yet
    clock.now += 0.6
    edited = registry.get("helper")
    assert edited.name == "Renamed"
    assert edited.system_prompt == "You help a lot.\n\nBe kind."


def test_a_broken_config_is_unavailable_with_the_reason(tmp_path) -> None:
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "config.json").write_text("{not json", encoding="utf-8")
    write_agent(tmp_path, "odd", {"provider": "carrier-pigeon"})
    registry = AgentRegistry(tmp_path, recheck_seconds=0)
    broken, odd = registry.get("broken"), registry.get("odd")
    assert not broken.available and "config.json unreadable" in broken.error
    assert not odd.available and "unknown provider 'carrier-pigeon'" in odd.error
    assert [a.id for a in registry.list()] == ["broken", "odd"]


def test_unknown_invalid_and_removed_agents_are_none(tmp_path) -> None:
    write_agent(tmp_path, "gone", {"name": "Gone"})
    registry = AgentRegistry(tmp_path, recheck_seconds=0)
    assert registry.get("gone").name == "Gone"
    (tmp_path / "gone" / "config.json").unlink()
    assert registry.get("gone") is None
    assert registry.get("nobody") is None
    assert registry.get("../etc") is None


def test_titles_switch_and_prompt(tmp_path) -> None:
    from lumina_app.agents.definitions.titling import DEFAULT_TITLE_PROMPT

    write_agent(tmp_path, "plain", {"name": "P"})
    write_agent(tmp_path, "off", {"name": "O", "titles": False}, {"title.md": " Name it. "})
    write_agent(tmp_path, "odd", {"name": "X", "titles": "no"})
    registry = AgentRegistry(tmp_path)
    plain, off, odd = (registry.get(a) for a in ("plain", "off", "odd"))
    assert plain.titles and plain.title_prompt == DEFAULT_TITLE_PROMPT
    assert not off.titles and off.title_prompt == "Name it."
    assert "titles" not in off.extra
    assert not odd.available and "'titles' must be true or false" in odd.error


def test_a_named_pipe_in_an_agent_folder_never_blocks_the_reader(tmp_path, monkeypatch) -> None:
    """An agent process with a shell can write its own folder: a FIFO swapped in where
    config.json or a prompt file was, between the check that it is a file and the read,
    must make the agent unavailable (or the prompt left out) at once, never block the
    thread that reads definitions (the event loop's). ``is_file`` answering True for
    everything stands for that window."""
    import concurrent.futures
    import os
    from pathlib import Path

    write_agent(tmp_path, "piped", {"name": "Piped"})
    (tmp_path / "piped" / "config.json").unlink()
    os.mkfifo(tmp_path / "piped" / "config.json")
    write_agent(tmp_path, "talker", {"name": "Talker"}, {"soul.md": "Be brief."})
    os.mkfifo(tmp_path / "talker" / "agent.md")
    registry = AgentRegistry(tmp_path, recheck_seconds=0)
    monkeypatch.setattr(Path, "is_file", lambda self: True)
    pool = concurrent.futures.ThreadPoolExecutor(1)
    read = pool.submit(lambda: (registry.get("piped"), registry.get("talker")))
    try:
        piped, talker = read.result(timeout=5)
    finally:
        if not read.done():  # the old code blocks in open(): a writer releases it
            for name in ("piped/config.json", "talker/agent.md"):
                fd = os.open(tmp_path / name, os.O_WRONLY | os.O_NONBLOCK)
                os.close(fd)
        pool.shutdown(wait=True)
    assert not piped.available and "not a regular file" in piped.error
    assert talker.available and talker.system_prompt == "Be brief."
