"""Live in every tab (#30), in Chromium: two pages signed in as one person follow each
other — the question and the streaming answer, a stop, renames, deletes, forks, a run
started over REST — while a third person's page receives nothing. The app runs with
Redis, so the notices go through Pub/Sub and the answer through the run event log."""

from __future__ import annotations

import re
import secrets
import statistics
import time

import httpx
import pytest
from playwright.sync_api import Page, expect

from lumina_app.ui.state.sidebar import LIST_PAGE
from tests.api.test_files import png
from tests.conftest import SHARED_REDIS_URL, write_agent
from tests.e2e.socket_frames import LIVE_FEED, hold_frames
from tests.e2e.test_accounts_ui import PASSWORD, Browsers, sign_in
from tests.e2e.test_chat_ui import answers, only_agent, send, shot, wait_idle
from tests.fake_llm import FakeLLM
from tests.server import AppServer
from tests.waits import wait_until_sync

pytestmark = pytest.mark.e2e
QUESTIONS = "[data-testid=pending-message], [data-testid=message][data-role=user]"


@pytest.fixture(scope="module")
def fake_model():
    """An OpenAI-compatible stand-in for the ``scripted`` agent (titles from any provider)."""
    with FakeLLM() as fake:
        yield fake


@pytest.fixture(scope="module")
def live_server(tmp_path_factory, fake_model):
    server = AppServer(
        tmp_path_factory.mktemp("e2e-live"),
        backend_only=False,
        env={
            "LUMINA_DEMO_DELAY_MS": "15",
            "LUMINA_REDIS_URL": SHARED_REDIS_URL,
            "LUMINA_REDIS_PREFIX": f"lumina-test:live:{secrets.token_hex(3)}",
            "LUMINA_SIGNIN_ATTEMPTS_PER_MINUTE": "200",
        },
    )
    server.prepare()
    agents = server.data_dir / "agents"
    write_agent(agents, "paging", {"name": "Paging"})
    scripted = {"name": "Scripted", "provider": "openai", "model": "fake-1"}
    write_agent(agents, "scripted", {**scripted, "base_url": fake_model.base_url})
    for name in ("alice", "bob"):
        server.cli("users", "add", name, "--password-stdin", stdin=PASSWORD + "\n")
    server.start()
    yield server
    server.stop()


@pytest.fixture
def people(browser):
    opened = Browsers(browser)
    yield opened
    opened.close()


def signed_in(page: Page, base: str, name: str) -> Page:
    """Signed in and hydrated (slower than expect's default 5 s on a loaded machine)."""
    sign_in(page, base, name)
    expect(page.get_by_test_id("signed-in-as").first).to_contain_text(name, timeout=20_000)
    return page


def texts(page: Page) -> list[str]:
    return [m.inner_text() for m in page.get_by_test_id("message").all()]


def assert_ends_as_a_reload(page: Page, *, answered: int) -> list[str]:
    """The followed run ends on ``page`` (its long answer in full), and the page then
    reads exactly as a reload of it does; what it read."""
    expect(answers(page)).to_have_count(answered, timeout=20_000)
    expect(answers(page).nth(answered - 1)).to_contain_text("word399")
    return assert_reads_as_a_reload(page, answered=answered)


def assert_reads_as_a_reload(page: Page, *, answered: int) -> list[str]:
    """The page, ``answered`` answers shown, reads exactly as a reload of it; what it read."""
    shown = texts(page)
    page.reload()
    expect(answers(page)).to_have_count(answered)
    # A message's time is drawn in the browser (rx.moment) after the rows appear: wait for
    # the reloaded page to settle, then it must read exactly as the live one did.
    assert wait_until_sync(
        lambda: texts(page) == shown, "the reloaded page to read as the live one", within=10
    )
    return shown


def answered_once_with_a_key(people: Browsers, server: AppServer) -> tuple[Page, str, str]:
    """Alice's page on a conversation answered once, its uuid, and an API key of hers."""
    page = signed_in(people.new(), server.url, "alice")
    page.goto(f"{server.url}/chat/assistant")
    send(page, "Opened in the browser")
    wait_idle(page)
    key = server.cli("keys", "create", "alice").strip()
    return page, page.url.rsplit("/", 1)[1], key


def two_tabs(people: Browsers, base: str) -> tuple[Page, Page, Page]:
    """Alice in two browser contexts (a laptop and a phone, say), Bob in a third."""
    one = signed_in(people.new(), base, "alice")
    two = signed_in(people.new(), base, "alice")
    bob = signed_in(people.new(), base, "bob")
    return one, two, bob


def test_a_question_sent_in_one_tab_streams_in_the_other(people, live_server) -> None:
    base = live_server.url
    one, two, bob = two_tabs(people, base)
    one.goto(f"{base}/chat/assistant")
    send(one, "First question, to make the conversation")
    wait_idle(one)
    expect(one).to_have_url(re.compile(r"/chat/assistant/[0-9a-f-]{36}$"))
    two.goto(one.url)
    expect(answers(two)).to_have_count(1)
    bob.goto(f"{base}/chat/assistant")

    send(one, "Tell me a lot /long")
    started = time.monotonic()
    expect(
        two.get_by_test_id("pending-message").or_(
            two.locator("[data-testid=message][data-role=user]").nth(1)
        )
    ).to_contain_text("Tell me a lot")
    assert time.monotonic() - started < 1.5  # "within 1 s", with the poll's slack
    streaming = two.get_by_test_id("streaming-message")
    expect(streaming).to_contain_text("word5")
    expect(streaming).to_contain_text("word40")  # it grows
    shot(one, "live-tab-one")
    shot(two, "live-tab-two")
    wait_idle(one)
    assert_ends_as_a_reload(two, answered=2)
    # Bob saw nothing of it: not the conversation, not the run.
    expect(bob.get_by_test_id("conversation-item")).to_have_count(0)
    assert "Tell me a lot" not in bob.content()


def test_a_run_between_the_load_and_the_live_feed_is_not_missed(people, live_server) -> None:
    """A page's feed comes on after its load (a CI failure at load: the other tab's run
    started in between and this page never showed it). Held here until that run has
    started and ended, the feed looks once when it comes on."""
    base = live_server.url
    one = signed_in(people.new(), base, "alice")
    two = people.new()
    held = hold_frames(two, LIVE_FEED, from_page=True)
    signed_in(two, base, "alice")
    one.goto(f"{base}/chat/assistant")
    send(one, "First question, to make the conversation")
    wait_idle(one)
    expect(one).to_have_url(re.compile(r"/chat/assistant/[0-9a-f-]{36}$"))
    before = len(held)  # the signed-in page's: its socket closes with the next load
    two.goto(one.url)
    expect(answers(two)).to_have_count(1)
    for _ in range(200):  # a poll that lets Playwright run the route's handler meanwhile
        if len(held) > before:
            break
        two.wait_for_timeout(100)
    assert len(held) > before, "the page never started its live feed"
    send(one, "Asked while the other tab was not yet live")
    wait_idle(one)
    expect(two.locator(QUESTIONS)).to_have_count(1)  # nothing told it: the gap is real
    server, frame = held[-1]
    server.send(frame)
    expect(two.locator(QUESTIONS).last).to_contain_text("Asked while the other tab")
    expect(answers(two)).to_have_count(2)


def test_stop_from_the_other_tab(people, live_server) -> None:
    base = live_server.url
    one, two, _bob = two_tabs(people, base)
    one.goto(f"{base}/chat/assistant")
    send(one, "Warm up")
    wait_idle(one)
    two.goto(one.url)
    expect(answers(two)).to_have_count(1)
    send(one, "A long answer to stop /long")
    expect(two.get_by_test_id("streaming-message")).to_contain_text("word5")
    two.get_by_test_id("stop-button").click()
    wait_idle(one)
    expect(answers(one).nth(1).get_by_test_id("message-status")).to_have_text("stopped")
    expect(answers(two).nth(1).get_by_test_id("message-status")).to_have_text("stopped")
    assert "word399" not in answers(two).nth(1).inner_text()


def test_a_run_started_over_rest_shows_up_in_an_open_page(people, live_server) -> None:
    base = live_server.url
    page, conversation, key = answered_once_with_a_key(people, live_server)
    accepted = httpx.post(
        f"{base}/api/v1/agents/assistant/execute",
        json={"task": "Sent from a script /long", "conversationId": conversation},
        headers={"Authorization": f"Bearer {key}"},
    )
    assert accepted.status_code == 202, accepted.text
    expect(page.get_by_test_id("streaming-message")).to_contain_text("word5")
    expect(
        page.locator("[data-testid=message][data-role=user]")
        .nth(1)
        .or_(page.get_by_test_id("pending-message"))
    ).to_contain_text("Sent from a script")
    expect(answers(page)).to_have_count(2, timeout=20_000)
    expect(answers(page).nth(1)).to_contain_text("word399")


def test_a_questions_files_show_in_the_open_page_without_a_reload(people, live_server) -> None:
    """A run started over REST with an image and a document: the open page shows the
    question's thumbnail and card while the answer streams, keeps them when it ends, and
    then reads as a reload."""
    base = live_server.url
    page, conversation, key = answered_once_with_a_key(people, live_server)
    with httpx.Client(headers={"Authorization": f"Bearer {key}"}, timeout=30) as rest:
        ids = []
        for name, data in (("shot.png", png(6, 4)), ("notes.md", b"# Notes\n\nKeep these.\n")):
            stored = rest.post(f"{base}/api/v1/files", files={"file": (name, data)})
            assert stored.status_code == 201, stored.text
            ids.append(stored.json()["id"])
        body = {"task": "Look at these /long", "conversationId": conversation, "files": ids}
        accepted = rest.post(f"{base}/api/v1/agents/assistant/execute", json=body)
        assert accepted.status_code == 202, accepted.text
    expect(page.get_by_test_id("streaming-message")).to_contain_text("word5")
    pending = page.get_by_test_id("pending-message").or_(
        page.locator("[data-testid=message][data-role=user]").nth(1)
    )
    expect(
        pending.locator(f"[data-testid=file-thumbnail][data-file-id='{ids[0]}']")
    ).to_be_visible()
    expect(pending.locator(f"[data-testid=file-card][data-file-id='{ids[1]}']")).to_be_visible()
    shot(page, "live-files-streaming")
    expect(answers(page)).to_have_count(2, timeout=20_000)
    question = page.locator("[data-testid=message][data-role=user]").nth(1)
    expect(question.locator("[data-file-id]")).to_have_count(2)
    assert_reads_as_a_reload(page, answered=2)
    expect(question.locator("[data-file-id]")).to_have_count(2)  # and so does the reload


def test_back_to_back_runs_from_elsewhere_are_each_shown(people, live_server) -> None:
    """Runs started one right after another over REST (each notice soon after the page's
    follower of the one before ended): the page shows each, and reads as a reload."""
    base = live_server.url
    page, conversation, key = answered_once_with_a_key(people, live_server)
    with httpx.Client(headers={"Authorization": f"Bearer {key}"}, timeout=30) as rest:
        for n in range(1, 5):
            done = rest.post(
                f"{base}/api/v1/agents/assistant/execute/sync",
                json={"task": f"Back to back {n}", "conversationId": conversation},
            )
            assert done.status_code == 200, done.text
    expect(answers(page)).to_have_count(5, timeout=20_000)
    for n in range(1, 5):
        expect(page.locator(QUESTIONS).nth(n)).to_contain_text(f"Back to back {n}")
    assert_reads_as_a_reload(page, answered=5)


def test_the_sidebar_follows_renames_deletes_and_forks(people, live_server) -> None:
    base = live_server.url
    one, two, bob = two_tabs(people, base)
    one.goto(f"{base}/chat/socrates")
    send(one, "Sidebar subject")
    wait_idle(one)
    two.goto(f"{base}/chat/socrates")
    bob.goto(f"{base}/chat/socrates")
    only_agent(two, "Socrates")  # the list spans every agent's: Alice has others too
    items = two.get_by_test_id("conversation-item")
    expect(items).to_have_count(1)
    # created: a new conversation in tab one appears in tab two
    one.goto(f"{base}/chat/socrates")
    send(one, "A second subject")
    expect(items).to_have_count(2)
    wait_idle(one)
    # renamed
    one.get_by_test_id("conversation-menu").first.click()
    one.get_by_text("Rename").click()
    one.get_by_test_id("rename-input").fill("Renamed live")
    one.get_by_test_id("rename-save").click()
    expect(items.first).to_contain_text("Renamed live")
    # forked (REST, as a client would)
    key = live_server.cli("keys", "create", "alice").strip()
    conversation = one.url.rsplit("/", 1)[1]
    forked = httpx.post(
        f"{base}/api/v1/conversations/{conversation}/fork",
        headers={"Authorization": f"Bearer {key}"},
    )
    assert forked.status_code == 201, forked.text
    expect(items).to_have_count(3)
    expect(two.get_by_test_id("fork-mark")).to_have_count(1)
    # deleted (REST again), while tab two has it open
    two.goto(one.url)
    expect(answers(two)).to_have_count(1)
    deleted = httpx.delete(
        f"{base}/api/v1/conversations/{conversation}", headers={"Authorization": f"Bearer {key}"}
    )
    assert deleted.status_code == 204, deleted.text
    expect(two.get_by_test_id("not-found")).to_contain_text("deleted")
    expect(two.get_by_test_id("conversation-item")).to_have_count(2)
    expect(bob.get_by_test_id("conversation-item")).to_have_count(0)


def test_a_generated_title_appears_in_both_tabs_and_a_given_one_stays(people, live_server) -> None:
    base = live_server.url
    one, two, _bob = two_tabs(people, base)
    two.goto(f"{base}/chat/socrates")
    one.goto(f"{base}/chat/socrates")
    send(one, "Please tell me why the sky is blue?")
    wait_idle(one)
    titled = "why the sky is blue"  # the demo model's proposal: its first meaningful words
    expect(one.get_by_test_id("conversation-title")).to_have_text(titled)
    expect(two.get_by_test_id("conversation-item").first).to_contain_text(titled)
    # A name given while the first answer streams is kept.
    one.goto(f"{base}/chat/socrates")
    send(one, "Please write a long one about tides /long")
    expect(one.get_by_test_id("streaming-message")).to_contain_text("word3")
    one.get_by_test_id("conversation-menu").first.click()
    one.get_by_role("menuitem", name="Rename").click()
    one.get_by_test_id("rename-input").fill("My tides")
    one.get_by_test_id("rename-save").click()
    expect(two.get_by_test_id("conversation-item").first).to_contain_text("My tides")
    wait_idle(one)
    one.wait_for_timeout(500)  # the proposal would land now
    expect(one.get_by_test_id("conversation-title")).to_have_text("My tides")
    expect(two.get_by_test_id("conversation-item").first).to_contain_text("My tides")


def test_a_title_from_an_openai_model_arrives_live_in_the_sidebar(
    people, live_server, fake_model
) -> None:
    """The scripted agent's model (OpenAI-compatible) names the conversation after its
    first answer; both tabs show the name without a reload."""
    base = live_server.url
    one, two, _bob = two_tabs(people, base)
    two.goto(f"{base}/chat/scripted")
    one.goto(f"{base}/chat/scripted")
    fake_model.script.titles = ['"Tides on Mars."']
    send(one, "Please explain how tides work on Mars")
    wait_idle(one)
    expect(one.get_by_test_id("conversation-title")).to_have_text("Tides on Mars")
    expect(two.get_by_test_id("conversation-item").first).to_contain_text("Tides on Mars")
    assert len(fake_model.title_requests) == 1
    shot(two, "live-title-openai")


RECORD_WORDS = """() => {
  window.__seen = {};
  new MutationObserver(() => {
    const el = document.querySelector('[data-testid=streaming-message]');
    if (!el) return;
    const t = performance.timeOrigin + performance.now();
    for (const m of el.innerText.matchAll(/word(\\d+)/g))
      if (!(m[1] in window.__seen)) window.__seen[m[1]] = t;
  }).observe(document.body, {childList: true, subtree: true, characterData: true});
}"""


def test_delay_from_a_token_to_the_other_tabs_dom(people, live_server) -> None:
    """The figure for docs/PERFORMANCE.md: how long after the sending tab shows a word the
    other tab shows it (both browsers on this machine; printed, bounded loosely)."""
    base = live_server.url
    one, two, _bob = two_tabs(people, base)
    one.goto(f"{base}/chat/assistant")
    send(one, "Warm up")
    wait_idle(one)
    two.goto(one.url)
    expect(answers(two)).to_have_count(1)
    one.evaluate(RECORD_WORDS)
    two.evaluate(RECORD_WORDS)
    send(one, "Measure me /long")
    wait_idle(one)
    expect(answers(two)).to_have_count(2, timeout=20_000)
    first, second = one.evaluate("window.__seen"), two.evaluate("window.__seen")
    delays = sorted(second[w] - first[w] for w in first if w in second)
    assert len(delays) > 50, (len(first), len(second))
    p50, p95 = statistics.median(delays), delays[int(0.95 * (len(delays) - 1))]
    print(f"\nsecond tab behind the first: p50 {p50:.0f} ms, p95 {p95:.0f} ms (n={len(delays)})")
    assert p50 < 1000


def test_a_live_refresh_keeps_the_pages_loaded_with_load_more(people, live_server) -> None:
    """More than a page of conversations, two pages shown: a conversation created,
    renamed or deleted elsewhere is reflected without dropping the second page."""
    base = live_server.url
    key = live_server.cli("keys", "create", "alice").strip()
    auth = {"Authorization": f"Bearer {key}"}
    made = [
        httpx.post(
            f"{base}/api/v1/conversations",
            json={"agentId": "paging", "title": f"Paged {i:02d}"},
            headers=auth,
        )
        for i in range(LIST_PAGE + 5)
    ]
    assert all(r.status_code == 201 for r in made), made[-1].text
    page = signed_in(people.new(), base, "alice")
    page.goto(f"{base}/chat/paging")
    only_agent(page, "Paging")  # the list spans every agent's: Alice has others too
    items = page.get_by_test_id("conversation-item")
    expect(items).to_have_count(LIST_PAGE)
    page.get_by_role("button", name="Load more").click()
    expect(items).to_have_count(LIST_PAGE + 5)
    oldest = made[0].json()["uuid"]  # the last row of the second page
    created = httpx.post(
        f"{base}/api/v1/conversations", json={"agentId": "paging", "title": "Brand new"},
        headers=auth,
    )  # fmt: skip
    assert created.status_code == 201, created.text
    expect(items).to_have_count(LIST_PAGE + 6)
    expect(items.first).to_contain_text("Brand new")
    renamed = httpx.patch(
        f"{base}/api/v1/conversations/{oldest}", json={"title": "Oldest, renamed"}, headers=auth
    )
    assert renamed.status_code == 200, renamed.text
    expect(items.last).to_contain_text("Oldest, renamed")
    expect(items).to_have_count(LIST_PAGE + 6)
    deleted = httpx.delete(f"{base}/api/v1/conversations/{created.json()['uuid']}", headers=auth)
    assert deleted.status_code == 204, deleted.text
    expect(items).to_have_count(LIST_PAGE + 5)
    expect(items.first).to_contain_text(f"Paged {LIST_PAGE + 4:02d}")
    shot(page, "live-sidebar-pages")
