"""Accounts in a real browser against `reflex run` in users mode (accounts made beforehand
with the CLI): sign in and out, a wrong password, the sign-in limit, two users who see only
their own conversations, a disabled user thrown out of an open page, the keys page (a key
that then works as a Bearer key), the account page, and the admin page."""

from __future__ import annotations

import re
import time

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from tests.e2e.test_chat_ui import send, shot, wait_idle
from tests.server import AppServer

pytestmark = pytest.mark.e2e

PASSWORD = "correct horse battery"
PEOPLE = {"root": True, "alice": False, "bob": False, "carol": False, "frank": False}


@pytest.fixture(scope="module")
def users_server(tmp_path_factory):
    server = AppServer(
        tmp_path_factory.mktemp("e2e-users"),
        backend_only=False,
        env={
            "LUMINA_DEMO_DELAY_MS": "15",
            "LUMINA_REDIS_URL": "",
            "LUMINA_SIGNIN_ATTEMPTS_PER_MINUTE": "200",
            "LUMINA_SIGNIN_ATTEMPTS_PER_USER_PER_MINUTE": "3",
        },
    )
    server.prepare()
    for name, admin in PEOPLE.items():
        flags = ["--admin"] if admin else []
        server.cli("users", "add", name, *flags, "--password-stdin", stdin=PASSWORD + "\n")
    server.start()
    yield server
    server.stop()


class Browsers:
    """Separate browser contexts (separate cookies): one person each."""

    def __init__(self, browser: Browser) -> None:
        self.browser = browser
        self.contexts = []

    def new(self) -> Page:
        context = self.browser.new_context(viewport={"width": 1280, "height": 800})
        self.contexts.append(context)
        page = context.new_page()
        page.errors = []
        page.on("pageerror", lambda exc: page.errors.append(str(exc)))
        page.set_default_timeout(15_000)
        return page

    def close(self) -> None:
        for context in self.contexts:
            for page in context.pages:
                assert page.errors == [], f"uncaught page errors: {page.errors}"
            context.close()


@pytest.fixture
def people(browser):
    opened = Browsers(browser)
    yield opened
    opened.close()


def sign_in(page: Page, base: str, name: str, password: str = PASSWORD) -> None:
    page.goto(f"{base}/login")
    expect(page.get_by_test_id("reason")).to_contain_text("username and password")
    page.get_by_test_id("username").fill(name)
    page.get_by_test_id("password").fill(password)
    page.get_by_test_id("sign-in").click()


def signed_in(page: Page, base: str, name: str) -> Page:
    sign_in(page, base, name)
    expect(page.get_by_test_id("signed-in-as").first).to_contain_text(name)
    return page


def test_sign_in_a_wrong_password_and_sign_out(people, users_server) -> None:
    base = users_server.url
    page = people.new()
    page.goto(f"{base}/chat/assistant")
    expect(page).to_have_url(re.compile(r"/login"))  # loopback is nobody in users mode
    expect(page.get_by_test_id("username")).to_be_visible()
    shot(page, "sign-in")
    sign_in(page, base, "alice", "not the password")
    expect(page.get_by_test_id("sign-in-error")).to_have_text("wrong username or password")
    sign_in(page, base, "alice")
    expect(page).to_have_url(re.compile(r"/chat/assistant$"))
    expect(page.get_by_test_id("signed-in-as").first).to_contain_text("alice")
    expect(page.get_by_test_id("link-admin")).to_have_count(0)  # not an admin
    page.get_by_test_id("sign-out").first.click()
    expect(page).to_have_url(re.compile(r"/login/?$"))
    page.goto(f"{base}/chat/assistant")
    expect(page).to_have_url(re.compile(r"/login"))


def test_two_users_see_only_their_own_conversations(people, users_server) -> None:
    base = users_server.url
    alice = signed_in(people.new(), base, "alice")
    bob = signed_in(people.new(), base, "bob")
    alice.goto(f"{base}/chat/assistant")
    send(alice, "Alice's secret plan")
    wait_idle(alice)
    expect(alice).to_have_url(re.compile(r"/chat/assistant/[0-9a-f-]{36}$"))
    alices_url = alice.url
    bob.goto(f"{base}/chat/assistant")
    send(bob, "Bob's shopping list")
    wait_idle(bob)
    expect(bob.get_by_test_id("conversation-item")).to_have_count(1)
    expect(bob.get_by_test_id("conversation-item")).to_contain_text("Bob's shopping list")
    shot(bob, "chat-signed-in")
    bob.goto(alices_url)
    expect(bob.get_by_test_id("not-found")).to_contain_text("does not exist")
    assert "secret plan" not in bob.content()
    alice.reload()
    expect(alice.get_by_test_id("conversation-item")).to_have_count(1)
    expect(alice.get_by_test_id("conversation-item")).to_contain_text("secret plan")


def test_a_disabled_user_is_thrown_out_of_an_open_page(people, users_server) -> None:
    base = users_server.url
    users_server.cli("users", "add", "dave", "--password-stdin", stdin=PASSWORD + "\n")
    page = signed_in(people.new(), base, "dave")
    expect(page.get_by_test_id("composer")).to_be_visible()
    users_server.cli("users", "disable", "dave")  # another process, no event from the page
    started = time.monotonic()
    expect(page).to_have_url(re.compile(r"/login"), timeout=20_000)
    assert time.monotonic() - started < 15  # one tick (5 s) after the cache (5 s) noticed
    sign_in(page, base, "dave")
    expect(page.get_by_test_id("sign-in-error")).to_have_text("this account is disabled")


def test_the_sign_in_page_says_when_to_try_again(people, users_server) -> None:
    base = users_server.url
    page = people.new()
    for _ in range(3):
        sign_in(page, base, "carol", "wrong guess")
        expect(page.get_by_test_id("sign-in-error")).to_have_text("wrong username or password")
    sign_in(page, base, "carol")  # even the right password waits now
    expect(page.get_by_test_id("sign-in-error")).to_contain_text("too many failed sign-ins")
    expect(page.get_by_test_id("sign-in-error")).to_contain_text("try again in")
    signed_in(people.new(), base, "bob")  # someone else is not held up


def test_the_keys_page_makes_a_key_that_works_as_a_bearer_key(people, users_server) -> None:
    base = users_server.url
    page = signed_in(people.new(), base, "alice")
    page.get_by_test_id("link-keys").first.click()
    expect(page).to_have_url(re.compile(r"/keys/?$"))
    page.get_by_test_id("key-name").fill("backup script")
    page.get_by_test_id("create-key").click()
    revealed = page.get_by_test_id("revealed-secret")
    expect(revealed).to_have_value(re.compile(r"^lum_[A-Za-z0-9_-]{43}$"))
    key = revealed.input_value()
    shot(page, "keys-created")
    page.get_by_test_id("copy-secret").click()
    # the toast (the chat's own hidden "Copied" note for messages is on every page too)
    toast = page.get_by_role("region", name=re.compile("Notifications")).get_by_text("Copied")
    expect(toast).to_be_visible()
    page.get_by_test_id("close-secret").click()
    expect(page.get_by_test_id("key-row")).to_have_count(1)
    expect(page.get_by_test_id("key-row")).to_contain_text(key[:12])
    assert key not in page.content()  # shown once, then gone from the page
    me = httpx.get(f"{base}/api/v1/me", headers={"Authorization": f"Bearer {key}"})
    assert me.status_code == 200 and me.json()["username"] == "alice"
    page.reload()
    expect(page.get_by_test_id("key-row")).to_contain_text("seconds ago")  # last used
    shot(page, "keys")
    page.get_by_test_id("revoke-key").click()
    page.get_by_test_id("confirm-revoke").click()
    expect(page.get_by_test_id("key-row")).to_have_count(0)
    gone = httpx.get(f"{base}/api/v1/me", headers={"Authorization": f"Bearer {key}"})
    assert gone.status_code == 401


def test_the_account_page_changes_the_password_and_lists_sessions(people, users_server) -> None:
    base = users_server.url
    laptop = signed_in(people.new(), base, "frank")
    page = signed_in(people.new(), base, "frank")
    page.goto(f"{base}/account")
    rows = page.get_by_test_id("session-row")
    expect(rows).to_have_count(2)
    expect(rows.filter(has_text="This browser")).to_have_count(1)
    expect(rows.first).to_contain_text("Chrome on Linux")
    shot(page, "account")
    page.get_by_test_id("current-password").fill(PASSWORD)
    page.get_by_test_id("new-password").fill("frank's new password")
    page.get_by_test_id("new-password-again").fill("frank's new password")
    page.get_by_test_id("change-password").click()
    expect(page.get_by_test_id("notice")).to_contain_text("1 other browser(s) signed out")
    expect(rows).to_have_count(1)
    expect(laptop).to_have_url(re.compile(r"/login"), timeout=20_000)  # its session ended
    assert page.get_by_test_id("current-password").input_value() == ""


def test_the_admin_page_creates_and_disables_a_user(people, users_server) -> None:
    base = users_server.url
    member = signed_in(people.new(), base, "bob")
    member.goto(f"{base}/admin")
    expect(member.get_by_test_id("not-found")).to_be_visible()
    assert httpx.get(f"{base}/api/v1/admin/users").status_code == 401

    admin = signed_in(people.new(), base, "root")
    admin.get_by_test_id("link-admin").first.click()
    expect(admin).to_have_url(re.compile(r"/admin/?$"))
    admin.get_by_test_id("new-username").fill("erin")
    admin.get_by_test_id("create-user").click()
    temporary = admin.get_by_test_id("revealed-secret")
    expect(temporary).to_have_value(re.compile(r".{16,}"))
    password = temporary.input_value()
    admin.get_by_test_id("close-secret").click()
    erin_row = admin.locator("[data-testid=user-row][data-username=erin]")
    expect(erin_row.get_by_test_id("user-state")).to_have_text("temporary password")

    erin = people.new()
    sign_in(erin, base, "erin", password)
    expect(erin).to_have_url(re.compile(r"/account/?$"))  # asked to choose a password first
    expect(erin.get_by_test_id("must-change")).to_be_visible()
    erin.goto(f"{base}/chat/assistant")
    expect(erin.get_by_test_id("composer")).to_be_visible()

    shot(admin, "admin")
    erin_row.get_by_test_id("disable-user").click()
    expect(admin.get_by_test_id("notice")).to_contain_text("Disabled erin: 1 session(s) ended")
    expect(erin_row.get_by_test_id("user-state")).to_have_text("disabled")
    expect(erin).to_have_url(re.compile(r"/login"), timeout=10_000)  # same process: one tick
    erin_row.get_by_test_id("enable-user").click()
    expect(erin_row.get_by_test_id("user-state")).to_have_text("temporary password")
    key = {"Authorization": "Bearer " + users_server.cli("keys", "create", "erin").strip()}
    erin_row.get_by_test_id("reset-password").click()
    for box in ("reset-end-sessions", "reset-revoke-keys"):  # shut out by default
        expect(admin.get_by_test_id(box)).to_be_checked()
    admin.get_by_test_id("reset-revoke-keys").uncheck()
    shot(admin, "admin-reset")
    admin.get_by_test_id("confirm-reset").click()  # empty: a temporary one is generated
    expect(temporary).to_have_value(re.compile(r".{16,}"))
    admin.get_by_test_id("close-secret").click()
    expect(admin.get_by_test_id("notice")).to_contain_text("their API keys still work")
    assert httpx.get(f"{base}/api/v1/me", headers=key).status_code == 200
    erin_row.get_by_test_id("reset-password").click()
    expect(admin.get_by_test_id("reset-revoke-keys")).to_be_checked()  # each time anew
    admin.get_by_test_id("confirm-reset").click()
    expect(temporary).to_have_value(re.compile(r".{16,}"))
    new_password = temporary.input_value()
    assert new_password != password
    admin.get_by_test_id("close-secret").click()
    expect(admin.get_by_test_id("notice")).to_contain_text(
        "New password set for erin; they were signed out everywhere and their API keys revoked"
    )
    assert httpx.get(f"{base}/api/v1/me", headers=key).status_code == 401
    sign_in(erin, base, "erin", new_password)
    expect(erin).to_have_url(re.compile(r"/account/?$"))
