"""The account page's data tools in a real browser (users mode): "Download everything"
gives the zip of the person's conversations and memories, the delete form refuses a wrong
password and then deletes the account and sends the browser to sign-in, and an admin
deletes another account from /admin. Screenshots at desktop and phone sizes."""

from __future__ import annotations

import json
import re
import zipfile

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.e2e.test_accounts_ui import PASSWORD, Browsers, signed_in
from tests.e2e.test_chat_ui import shot
from tests.server import AppServer

pytestmark = pytest.mark.e2e

PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def data_server(tmp_path_factory):
    server = AppServer(
        tmp_path_factory.mktemp("e2e-account-data"),
        backend_only=False,
        env={"LUMINA_DEMO_DELAY_MS": "15", "LUMINA_REDIS_URL": ""},
    )
    server.prepare()
    for name, admin in (("root", True), ("gina", False), ("hank", False)):
        flags = ["--admin"] if admin else []
        server.cli("users", "add", name, *flags, "--password-stdin", stdin=PASSWORD + "\n")
    server.start()
    yield server
    server.stop()


@pytest.fixture
def people(browser):
    opened = Browsers(browser)
    yield opened
    opened.close()


def say_as(server: AppServer, name: str, text: str) -> str:
    key = server.cli("keys", "create", name).strip()
    resp = httpx.post(
        f"{server.url}/api/v1/agents/assistant/execute/sync",
        json={"task": text},
        headers={"Authorization": f"Bearer {key}"},
        timeout=30,
    )
    assert resp.status_code == 200, resp.text
    return resp.json()["conversationId"]


def test_download_everything_then_delete_the_account(people, data_server) -> None:
    base = data_server.url
    conversation = say_as(data_server, "gina", "gina's marmalade recipe")
    page: Page = signed_in(people.new(), base, "gina")
    page.goto(f"{base}/account")
    expect(page.get_by_test_id("export-everything")).to_be_visible()
    shot(page, "account-data-desktop")
    with page.expect_download() as download:
        page.get_by_test_id("export-everything").click()
    archive = zipfile.ZipFile(download.value.path())
    history = json.loads(
        archive.read(f"agents/assistant/conversations/{conversation}/history.json")
    )
    assert history[0]["content"] == "gina's marmalade recipe"
    assert json.loads(archive.read("account.json"))["username"] == "gina"

    page.set_viewport_size(PHONE)
    page.get_by_test_id("delete-account").scroll_into_view_if_needed()
    shot(page, "account-data-phone")
    page.set_viewport_size({"width": 1280, "height": 800})
    page.get_by_test_id("delete-password").fill("not my password")
    page.get_by_test_id("delete-confirm").fill("gina")
    page.get_by_test_id("delete-account").click()
    expect(page.get_by_test_id("error")).to_contain_text("password is not right")
    page.get_by_test_id("delete-password").fill(PASSWORD)
    page.get_by_test_id("delete-account").click()
    expect(page).to_have_url(re.compile(r"/login"), timeout=20_000)
    resp = httpx.post(f"{base}/api/v1/auth/login", json={"username": "gina", "password": PASSWORD})
    assert resp.status_code == 401


def test_an_admin_deletes_an_account_on_the_admin_page(people, data_server) -> None:
    base = data_server.url
    say_as(data_server, "hank", "hank's bicycle")
    admin = signed_in(people.new(), base, "root")
    admin.goto(f"{base}/admin")
    row = admin.locator("[data-testid=user-row][data-username=hank]")
    row.get_by_test_id("delete-user").click()
    shot(admin, "admin-delete-confirm")
    admin.get_by_test_id("confirm-delete-user").click()
    expect(admin.get_by_test_id("notice")).to_contain_text("Deleted hank: 1 conversation(s)")
    expect(row).to_have_count(0)
