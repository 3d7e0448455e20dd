"""Attaching files in a real browser (#48): the paperclip's picker, a drop and a paste make
chips (an image with its thumbnail); one is removed; the message goes with the rest and
shows thumbnails and cards, still there after a reload, and a click gives the same bytes
back. A file too big, of a refused type or over the owner's quota says why and leaves no
chip; a send that cannot start gives its files back with its words; text typed while a
file uploads is kept and Send says it waits; a file picked meanwhile goes next; a message
of files only; the chips and the paperclip at 390×844. Screenshots under /tmp/shots-h3/."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.conftest import BACKENDS
from tests.e2e.test_chat_ui import answers, open_new, wait_idle
from tests.server import AppServer

pytestmark = pytest.mark.e2e

MAX_FILE = 300_000  # LUMINA_MAX_FILE_BYTES of this test's server
QUOTA = 1_500_000  # LUMINA_MAX_FILE_BYTES_PER_OWNER
PER_MESSAGE = 400_000  # LUMINA_MAX_MESSAGE_FILE_BYTES
SHOTS = Path("/tmp/shots-h3")
PHONE = {"width": 390, "height": 844}


def png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    """A real PNG of one colour (the server sniffs the bytes, the browser draws them)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    row = b"\x00" + bytes(rgb) * width
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(row * height))
        + chunk(b"IEND", b"")
    )


PHOTO = png(480, 320, (40, 120, 200))
PASTED = png(30, 30, (220, 80, 60))
NOTES = b"Shopping list\n- bread\n- tea\n"
TABLE = b"name,count\napples,3\npears,5\n"


@pytest.fixture(scope="module", params=BACKENDS)
def attach_server(request, tmp_path_factory, _databases):
    """A server of this module's own (its limits set low), on each SQL backend in turn:
    the files' bytes are rows of the database."""
    database = _databases(request.param)
    database.truncate()
    server = AppServer(
        tmp_path_factory.mktemp(f"e2e-attach-{request.param}"),
        backend_only=False,
        database_url=database.url,
        env={
            "LUMINA_DEMO_DELAY_MS": "15",
            "LUMINA_REDIS_URL": "",
            "LUMINA_MAX_FILE_BYTES": str(MAX_FILE),
            "LUMINA_MAX_FILE_BYTES_PER_OWNER": str(QUOTA),
            "LUMINA_MAX_MESSAGE_FILE_BYTES": str(PER_MESSAGE),
        },
    )
    server.start()
    yield server
    server.stop()


@pytest.fixture
def tab(browser, attach_server):
    context = browser.new_context(viewport={"width": 1280, "height": 800}, accept_downloads=True)
    page = context.new_page()
    page.errors = []
    page.on("pageerror", lambda exc: page.errors.append(str(exc)))
    page.set_default_timeout(15_000)
    yield page
    context.close()
    assert page.errors == [], f"uncaught page errors: {page.errors}"


def snap(page: Page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"))


def chips(page: Page):
    return page.get_by_test_id("chip")


# The picker's input once React has taken it over (a page still loading drops a choice).
INPUT_LIVE = """() => {
    const input = document.querySelector('[data-testid=attach-zone] input[type=file]');
    return !!input && Object.keys(input).some((k) => k.startsWith('__reactProps'));
}"""


def pick(page: Page, *files: tuple[str, str, bytes]) -> None:
    """The paperclip's file picker, as a person choosing files."""
    page.wait_for_function(INPUT_LIVE)
    page.locator("[data-testid=attach-zone] input[type=file]").set_input_files(
        [{"name": n, "mimeType": t, "buffer": b} for n, t, b in files]
    )


# A File in the page, from bytes sent as a list of numbers.
MAKE_FILE = "([name, type, bytes]) => new File([new Uint8Array(bytes)], name, {type})"


def drop(page: Page, name: str, media_type: str, data: bytes) -> None:
    """Files dragged over the conversation (the hint shows) and dropped on it."""
    page.evaluate(
        f"""([name, type, bytes]) => {{
            const file = ({MAKE_FILE})([name, type, bytes]);
            const over = new DataTransfer(); over.items.add(file);
            const list = document.getElementById("message-list");
            list.dispatchEvent(new DragEvent("dragover", {{bubbles: true, cancelable: true,
                dataTransfer: over}}));
        }}""",
        [name, media_type, list(data)],
    )
    expect(page.get_by_test_id("drop-hint")).to_be_visible()
    page.evaluate(
        f"""([name, type, bytes]) => {{
            const file = ({MAKE_FILE})([name, type, bytes]);
            const moved = new DataTransfer(); moved.items.add(file);
            document.getElementById("message-list").dispatchEvent(new DragEvent("drop",
                {{bubbles: true, cancelable: true, dataTransfer: moved}}));
        }}""",
        [name, media_type, list(data)],
    )


def paste(page: Page, name: str, media_type: str, data: bytes) -> None:
    """An image pasted into the text box (a screenshot from the clipboard)."""
    page.evaluate(
        f"""([name, type, bytes]) => {{
            const file = ({MAKE_FILE})([name, type, bytes]);
            const clip = new DataTransfer(); clip.items.add(file);
            document.getElementById("composer").dispatchEvent(new ClipboardEvent("paste",
                {{bubbles: true, cancelable: true, clipboardData: clip}}));
        }}""",
        [name, media_type, list(data)],
    )


def image_drawn(locator) -> None:
    """The image was fetched (with the page's own credentials) and drawn."""
    expect(locator).to_be_visible()
    locator.evaluate("img => img.complete || new Promise(r => img.addEventListener('load', r))")
    assert locator.evaluate("img => img.naturalWidth") > 0


def throttled(page: Page, upload_bytes_per_second: int):
    """The page's uploads slowed to a rate (Chromium's network emulation); its session."""
    cdp = page.context.new_cdp_session(page)
    cdp.send("Network.enable")
    unthrottled(cdp, upload=upload_bytes_per_second, latency=20)
    return cdp


def unthrottled(cdp, *, upload: int = -1, latency: int = 0) -> None:
    conditions = {"offline": False, "latency": latency, "downloadThroughput": -1}
    cdp.send("Network.emulateNetworkConditions", conditions | {"uploadThroughput": upload})


def questions(page: Page):
    return page.locator("[data-testid=message][data-role=user]")


def stored_files(server: AppServer, page: Page) -> list[dict]:
    """The open conversation's messages as the API lists them (local mode: loopback)."""
    conversation = page.url.rstrip("/").rsplit("/", 1)[-1]
    resp = httpx.get(f"{server.url}/api/v1/conversations/{conversation}/messages")
    assert resp.status_code == 200, resp.text
    return [f for m in resp.json()["items"] for f in m.get("files", [])]


def test_pick_drop_paste_remove_send_reload_and_open(tab: Page, attach_server) -> None:
    page = tab
    open_new(page, attach_server.url)
    page.get_by_test_id("composer").fill("What is in these?")
    pick(page, ("photo.png", "image/png", PHOTO), ("notes.txt", "text/plain", NOTES))
    expect(chips(page)).to_have_count(2)
    image_drawn(chips(page).first.get_by_test_id("chip-thumbnail"))
    expect(chips(page).nth(1)).to_contain_text("notes.txt")
    expect(chips(page).nth(1)).to_contain_text("28 B")
    drop(page, "table.csv", "text/csv", TABLE)
    expect(chips(page)).to_have_count(3)
    expect(chips(page).nth(2)).to_contain_text("table.csv")
    paste(page, "image.png", "image/png", PASTED)
    expect(chips(page)).to_have_count(4)
    image_drawn(chips(page).nth(3).get_by_test_id("chip-thumbnail"))
    expect(page.get_by_test_id("composer")).to_have_value("What is in these?")
    snap(page, "chips-desktop")

    removed = chips(page).nth(2).get_attribute("data-file-id")
    chips(page).nth(2).get_by_test_id("chip-remove").click()
    expect(chips(page)).to_have_count(3)
    assert httpx.get(f"{attach_server.url}/api/v1/files/{removed}").status_code == 404
    kept = [chips(page).nth(i).get_attribute("data-file-id") for i in range(3)]

    page.answers_before = answers(page).count()
    page.get_by_test_id("composer").press("Enter")
    question = questions(page).last
    expect(question).to_contain_text("What is in these?")
    wait_idle(page)
    expect(chips(page)).to_have_count(0)
    expect(page.get_by_test_id("composer")).to_have_value("")
    assert [f["id"] for f in stored_files(attach_server, page)] == kept

    for reloaded in (False, True):
        if reloaded:
            page.reload()
        question = questions(page).last
        thumbs = question.get_by_test_id("file-thumbnail")
        expect(thumbs).to_have_count(2)
        for i in range(2):
            image_drawn(thumbs.nth(i).locator("img"))
        expect(question.get_by_test_id("file-card")).to_have_count(1)
        expect(question.get_by_test_id("file-card")).to_contain_text("notes.txt")
    snap(page, "message-desktop")

    with page.expect_download() as download:
        question.get_by_test_id("file-card").click()
    assert Path(download.value.path()).read_bytes() == NOTES
    assert download.value.suggested_filename == "notes.txt"
    with page.context.expect_page() as opened:
        thumbs.first.click()
    full = opened.value
    full.wait_for_load_state()
    assert full.url.endswith(f"/api/v1/files/{kept[0]}?inline=true")
    assert page.request.get(full.url).body() == PHOTO
    full.close()


def test_a_message_of_files_only(tab: Page, attach_server) -> None:
    page = tab
    open_new(page, attach_server.url)
    pick(page, ("report.txt", "text/plain", b"Quarterly numbers: up.\n"))
    expect(chips(page)).to_have_count(1)
    page.answers_before = answers(page).count()
    page.get_by_test_id("send-button").click()
    wait_idle(page)
    expect(questions(page).last.get_by_test_id("file-card")).to_contain_text("report.txt")
    expect(chips(page)).to_have_count(0)
    assert [f["name"] for f in stored_files(attach_server, page)] == ["report.txt"]


def test_a_send_that_cannot_start_gives_back_its_files_and_words(tab: Page, attach_server) -> None:
    page = tab
    open_new(page, attach_server.url)
    big = [(f"part{n}.txt", "text/plain", (f"{n:06d}\n" * 30_000).encode()) for n in (1, 2)]
    pick(page, *big)  # 210 KB each: over the message's 400 KB together
    expect(chips(page)).to_have_count(2)
    page.get_by_test_id("composer").fill("Both parts, please")
    page.get_by_test_id("composer").press("Enter")
    expect(page.get_by_test_id("chat-error")).to_contain_text("the files of one message may hold")
    expect(chips(page)).to_have_count(2)
    expect(page.get_by_test_id("composer")).to_have_value("Both parts, please")
    expect(questions(page)).to_have_count(0)
    chips(page).nth(1).get_by_test_id("chip-remove").click()
    expect(chips(page)).to_have_count(1)
    page.answers_before = answers(page).count()
    page.get_by_test_id("composer").press("Enter")
    wait_idle(page)
    expect(questions(page).last.get_by_test_id("file-card")).to_contain_text("part1.txt")
    expect(chips(page)).to_have_count(0)


def test_refused_files_say_why_and_leave_no_chip(tab: Page, attach_server) -> None:
    page = tab
    open_new(page, attach_server.url)
    page.wait_for_load_state("networkidle")  # the page's socket up before the first choice
    refused = page.get_by_test_id("attach-refused")
    pick(page, ("huge.txt", "text/plain", b"x" * (MAX_FILE + 1)))  # held back by the page
    expect(refused).to_be_visible()
    expect(refused).to_contain_text("huge.txt: too big to attach (files can be up to 300 KB)")
    pick(page, ("page.html", "text/html", b"<!doctype html><html><script>1</script></html>"))
    expect(refused).to_contain_text("page.html was not attached: only images")
    expect(refused).to_be_visible()
    expect(chips(page)).to_have_count(0)
    pick(page, ("empty.txt", "text/plain", b""))
    expect(refused).to_contain_text("empty.txt was not attached: the file is empty")
    expect(chips(page)).to_have_count(0)
    # Over the owner's quota (the server's check, as REST's): new contents until it is full.
    page.get_by_test_id("attach-refused-box").get_by_role("button").click()
    expect(refused).to_have_count(0)
    chips_or_refusal = page.locator("[data-testid=chip], [data-testid=attach-refused]")
    for n in range(QUOTA // 250_000 + 1):  # the files of the other tests count as well
        pick(page, (f"block{n}.txt", "text/plain", (f"{n:08d}" * 31_250).encode()))
        expect(chips_or_refusal).to_have_count(n + 1)
        if refused.count():
            break
    expect(refused).to_contain_text(f"block{n}.txt was not attached: your files are full")
    expect(chips(page)).to_have_count(n)
    assert n >= 1
    snap(page, "refused-desktop")
    for left in range(chips(page).count() - 1, -1, -1):  # the quota free for the next tests
        chips(page).first.get_by_test_id("chip-remove").click()
        expect(chips(page)).to_have_count(left)


def test_text_typed_during_an_upload_is_kept_and_send_waits(tab: Page, attach_server) -> None:
    page = tab
    open_new(page, attach_server.url)
    cdp = throttled(page, 60_000)
    pick(page, ("slow.txt", "text/plain", b"slow upload line\n" * 14_000))  # ~240 KB
    uploading = page.get_by_test_id("attach-uploading")
    expect(uploading).to_be_visible()
    page.get_by_test_id("composer").type("typed while it uploads", delay=10)
    expect(uploading).to_contain_text("%")
    pick(page, ("next.txt", "text/plain", b"picked while the first one uploads\n"))  # waits
    page.get_by_test_id("composer").press("Enter")
    expect(page.get_by_test_id("wait-upload")).to_be_visible()
    expect(page.get_by_test_id("composer")).to_have_value("typed while it uploads")
    expect(page.get_by_test_id("pending-message")).to_have_count(0)
    expect(chips(page)).to_have_count(2, timeout=30_000)
    expect(uploading).to_have_count(0)
    expect(chips(page).nth(1)).to_contain_text("next.txt")
    unthrottled(cdp)
    expect(page.get_by_test_id("composer")).to_have_value("typed while it uploads")
    page.answers_before = answers(page).count()
    page.get_by_test_id("composer").press("Enter")
    wait_idle(page)
    expect(questions(page).last).to_contain_text("typed while it uploads")
    expect(questions(page).last.get_by_test_id("file-card")).to_have_count(2)
    expect(questions(page).last.get_by_test_id("file-card").first).to_contain_text("slow.txt")


def test_an_answer_streams_on_while_a_file_uploads(tab: Page, attach_server) -> None:
    """The upload is a background event over its chunks: the tab's answer keeps streaming
    while a throttled file arrives and is stored, and both end whole."""
    page = tab
    open_new(page, attach_server.url)
    page.answers_before = answers(page).count()
    page.get_by_test_id("composer").fill("Tell me a lot /long")
    page.get_by_test_id("composer").press("Enter")
    streaming = page.get_by_test_id("streaming-message")
    expect(streaming).to_contain_text("word3")
    cdp = throttled(page, 40_000)
    pick(page, ("during.txt", "text/plain", b"uploaded while it streams\n" * 9_000))  # ~230 KB
    uploading = page.get_by_test_id("attach-uploading")
    expect(uploading).to_be_visible()
    words = lambda: len(streaming.inner_text().split())  # noqa: E731
    seen = words()
    page.wait_for_timeout(1_500)
    assert uploading.count() == 1, "the upload ended too soon to tell"
    assert words() > seen + 20, "the answer stood still while the file uploaded"
    unthrottled(cdp)
    expect(chips(page)).to_have_count(1, timeout=30_000)
    expect(chips(page).first).to_contain_text("during.txt")
    wait_idle(page)
    expect(answers(page).last).to_contain_text("word399")
    chips(page).first.get_by_test_id("chip-remove").click()  # the quota free for the next tests
    expect(chips(page)).to_have_count(0)


def _inside(inner: dict, width: int) -> None:
    assert inner["x"] >= 0 and inner["x"] + inner["width"] <= width, f"off screen: {inner}"


def _apart(a: dict, b: dict) -> None:
    apart = (
        a["x"] + a["width"] <= b["x"]
        or b["x"] + b["width"] <= a["x"]
        or a["y"] + a["height"] <= b["y"]
        or b["y"] + b["height"] <= a["y"]
    )
    assert apart, f"these overlap: {a} {b}"


def test_chips_and_the_paperclip_fit_a_phone(browser, attach_server) -> None:
    context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    page = context.new_page()
    open_new(page, attach_server.url)
    page.get_by_test_id("composer").fill("On a phone")
    pick(
        page,
        ("a-photo-with-a-rather-long-name-from-the-camera-roll.png", "image/png", PHOTO),
        ("meeting-notes-for-the-third-quarter-planning.txt", "text/plain", NOTES),
        ("table.csv", "text/csv", TABLE),
    )
    expect(chips(page)).to_have_count(3)
    boxes = {
        name: page.get_by_test_id(name).bounding_box()
        for name in ("attach-button", "composer", "send-button")
    }
    for box in boxes.values():
        _inside(box, PHONE["width"])
    _apart(boxes["attach-button"], boxes["composer"])
    _apart(boxes["composer"], boxes["send-button"])
    for i in range(3):
        chip = chips(page).nth(i).bounding_box()
        _inside(chip, PHONE["width"])
        for box in boxes.values():
            _apart(chip, box)
        _inside(chips(page).nth(i).get_by_test_id("chip-remove").bounding_box(), PHONE["width"])
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    snap(page, "chips-phone")
    page.answers_before = answers(page).count()
    page.get_by_test_id("send-button").click()
    wait_idle(page)
    files = questions(page).last.get_by_test_id("message-files")
    expect(files).to_be_visible()
    _inside(files.bounding_box(), PHONE["width"])
    for card in questions(page).last.get_by_test_id("file-card").all():
        _inside(card.bounding_box(), PHONE["width"])
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    snap(page, "message-phone")
    context.close()
