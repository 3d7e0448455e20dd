"""UI benchmark: the real app (``reflex run --env prod``) in chromium, driven by Playwright.

    python bench/ui.py [--samples 30] [--opens 5] [--quick]

The app through the tests' AppServer (frontend + backend, own work folder, temp SQLite,
data/agents, in-process hot window, demo model, agent ``assistant``); conversations are
seeded into its database before it starts (alternating question/answer, every text
distinct, the last one tagged). Times are ``performance.now()`` in the page.

1. Click-send -> first answer text visible (instant model): in a 10-message conversation,
   from the Enter keydown to the first DOM mutation showing "offline" (the demo answer's
   first words) in the streaming bubble or a new answer, plus the next animation frame.
   One open page, 2 warm-up turns. Anchors, interleaved: the user's own question on screen
   (the UI's round-trip floor), and a ``fetch()`` of ``POST .../execute/stream`` from the
   same page (first byte, first chunk with "offline") in another conversation. Also the
   size of the frame that re-sends the message list when a turn settles.
2. Opening a conversation: ``page.goto`` of a 1,000- and a 10-message conversation,
   interleaved, each in a new page of a warm browser context, from navigation start until
   the last message shows its tag inside the list's box (+ the next frame); and the same
   switch by a click in the sidebar. PASS needs every 1,000-message sample <= 1 s.
3. State delta per streaming update (model at 20 ms/word, the UI flushes every ~50 ms): one
   "/long" answer in a 10- and a 1,000-message conversation; every websocket frame the
   browser receives (Playwright ``framereceived``, UTF-8 bytes before compression);
   updates = frames carrying ``stream_text`` and no message list.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path

from _common import Checks, fmt_ms, header, note, parse_args, percentile, table
from _servers import app_server

from bench import _app

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
ARGS += ["--disable-dev-shm-usage"]
AGENT = "assistant"
MARK = "offline"  # the demo answer starts "**Assistant** here (offline demo model)."

TARGET_SEND_MS = 150.0
TARGET_OPEN_MS = 1000.0
TARGET_DELTA_BYTES = 16 * 1024

# Watches for the last message of the list to show ``target`` inside the list's box.
WATCH_LAST_JS = """
(target) => {
  const W = window.__open = {target, dom: null, frame: null, t0: null};
  const onClick = () => { if (W.t0 === null) W.t0 = performance.now(); };
  document.addEventListener('click', onClick, true);
  let obs = null;
  const check = () => {
    if (W.dom !== null) return;
    const all = document.querySelectorAll('[data-testid=message]');
    const last = all[all.length - 1];
    if (!last || !last.textContent.includes(target)) return;
    const r = last.getBoundingClientRect();
    const box = document.getElementById('message-list');
    const b = box ? box.getBoundingClientRect() : {top: 0, bottom: innerHeight};
    if (r.height <= 0 || r.bottom <= b.top || r.top >= b.bottom) {
      requestAnimationFrame(check);  // laid out but not (yet) inside the visible box
      return;
    }
    W.dom = performance.now();
    obs.disconnect();
    document.removeEventListener('click', onClick, true);
    requestAnimationFrame(() => { W.frame = performance.now(); });
  };
  obs = new MutationObserver(check);
  obs.observe(document, {subtree: true, childList: true, characterData: true});
  check();
}
"""

# Times the Enter keydown, the question on screen and the first answer text on screen.
SEND_JS = """
([marker, mark]) => {
  const answers = () => document.querySelectorAll('[data-testid=message][data-role=assistant]');
  const before = answers().length;
  const S = window.__send = {t0: null, question: null, questionFrame: null,
                             answer: null, answerFrame: null};
  const onKey = (e) => { if (e.key === 'Enter' && S.t0 === null) S.t0 = performance.now(); };
  document.addEventListener('keydown', onKey, true);
  const frame = (key) => requestAnimationFrame(() => { S[key] = performance.now(); });
  let obs = null;
  const check = () => {
    const now = performance.now();
    if (S.question === null) {
      const p = document.querySelector('[data-testid=pending-message]');
      const u = document.querySelectorAll('[data-testid=message][data-role=user]');
      const l = u[u.length - 1];
      if ((p && p.textContent.includes(marker)) || (l && l.textContent.includes(marker))) {
        S.question = now;
        frame('questionFrame');
      }
    }
    if (S.answer === null) {
      const s = document.querySelector('[data-testid=streaming-message]');
      const a = answers();
      if ((s && s.textContent.includes(mark))
          || (a.length > before && a[a.length - 1].textContent.includes(mark))) {
        S.answer = now;
        frame('answerFrame');
      }
    }
    if (S.question !== null && S.answer !== null) {
      obs.disconnect();
      document.removeEventListener('keydown', onKey, true);
    }
  };
  obs = new MutationObserver(check);
  obs.observe(document.body, {subtree: true, childList: true, characterData: true});
  return before;
}
"""

FETCH_JS = """
async ([url, body, mark]) => {
  const t0 = performance.now();
  const r = await fetch(url, {method: 'POST', headers: {'content-type': 'application/json'},
                              body: JSON.stringify(body)});
  const reader = r.body.getReader();
  const dec = new TextDecoder();
  let text = '', firstByte = null, firstText = null;
  while (true) {
    const {done, value} = await reader.read();
    if (done) break;
    const now = performance.now();
    if (firstByte === null) firstByte = now - t0;
    text += dec.decode(value, {stream: true});
    if (firstText === null && text.includes(mark)) firstText = now - t0;
  }
  return {firstByte, firstText, ok: r.status === 200 && text.includes('"done": true')};
}
"""

SEND_DONE_JS = "() => window.__send.answerFrame !== null && window.__send.questionFrame !== null"


@dataclass
class Seeded:
    uuid: str
    title: str
    count: int
    tag: str  # unique, in the last message

    def url(self, base: str) -> str:
        return f"{base}/chat/{AGENT}/{self.uuid}"


def texts(name: str, count: int) -> tuple[list[str], str]:
    """``count`` distinct texts, question first; the last one starts with a unique tag."""
    out = []
    for i in range(count):
        k, area = i // 2 + 1, i // 2 % 17
        if i % 2 == 0:
            out.append(f"Question {k} in {name}: how would you approach step {k} of the plan?")
        else:
            out.append(
                f"Answer {k} in {name}: here is how I would go about step {k}.\n\n"
                f"1. **Check** the current state of item {k} and what depends on it.\n"
                f"2. Make the change in a small, reversible commit (area {area}).\n"
                f"3. Run the tests for area {area} and compare with the last run."
            )
    tag = f"LATEST-{name}-{uuid.uuid4().hex[:10]}"
    out[-1] = f"{tag} {out[-1]}"
    return out, tag


def server(workdir: Path, delay_ms: int, specs: dict[str, int], seeded: dict[str, Seeded]):
    """The app with ``specs`` (name -> message count) seeded into ``seeded``."""
    made = {name: (f"bench {name} ({n} messages)", *texts(name, n)) for name, n in specs.items()}

    def seed(database_url: str) -> None:
        convs = {name: (title, msgs) for name, (title, msgs, _) in made.items()}
        for name, conv_uuid in _app.seed_sync(database_url, AGENT, convs).items():
            title, _, tag = made[name]
            seeded[name] = Seeded(conv_uuid, title, specs[name], tag)

    env = {"LUMINA_DEMO_DELAY_MS": str(delay_ms), "LUMINA_REDIS_URL": ""}
    return app_server(workdir, backend_only=False, env=env, seed=seed)


def new_page(context, errors: list[str]):
    page = context.new_page()
    page.set_default_timeout(20_000)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    return page


def open_and_wait(page, url: str, tag: str) -> None:
    from playwright.sync_api import expect

    page.goto(url)
    expect(page.locator("[data-testid=message]").last).to_contain_text(tag)
    expect(page.get_by_test_id("composer")).to_be_visible()


def send(page, text: str, marker: str) -> None:
    """Type ``text``, press Enter and wait until the turn has settled."""
    from playwright.sync_api import expect

    before = page.evaluate(SEND_JS, [marker, MARK])
    page.get_by_test_id("composer").fill(text)
    page.get_by_test_id("composer").press("Enter")
    page.wait_for_function(SEND_DONE_JS, timeout=30_000)
    answers = page.locator("[data-testid=message][data-role=assistant]")
    expect(answers).to_have_count(before + 1, timeout=60_000)
    expect(page.get_by_test_id("send-button")).to_be_visible(timeout=20_000)


def received_frames(page, frames: list[str], capture: dict) -> None:
    """Append every websocket frame the page receives while ``capture["on"]``."""

    def on_ws(ws) -> None:
        def on_frame(payload) -> None:
            if capture["on"]:
                text = payload if isinstance(payload, str) else payload.decode("utf-8", "replace")
                frames.append(text)

        ws.on("framereceived", on_frame)

    page.on("websocket", on_ws)


# -- the three measurements -------------------------------------------------------------------


def bench_send(context, base: str, seeded: dict[str, Seeded], samples: int, errors: list[str]):
    page = new_page(context, errors)
    frames: list[str] = []
    capture = {"on": False}
    received_frames(page, frames, capture)
    conv, other = seeded["send"], seeded["fetch"]
    open_and_wait(page, conv.url(base), conv.tag)
    api = f"{base}/api/v1/agents/{AGENT}/execute/stream"
    rows, settle_sizes = [], []
    for i in range(samples + 2):  # 2 warm-up turns
        marker = f"bench-q{i}-{uuid.uuid4().hex[:6]}"
        frames.clear()
        capture["on"] = True
        send(page, f"Quick question {marker}: what changed since the last step?", marker)
        page.wait_for_timeout(200)  # the sidebar refresh and health check after a turn
        capture["on"] = False
        settle_sizes += [len(f.encode()) for f in frames if '"messages_rx_state_":[{' in f]
        s = page.evaluate("() => window.__send")
        body = {"task": f"anchor {marker}", "conversationId": other.uuid}
        fetch = page.evaluate(FETCH_JS, [api, body, MARK])
        if i >= 2:
            rows.append(
                {
                    "answer": s["answerFrame"] - s["t0"],
                    "question": s["questionFrame"] - s["t0"],
                    "fetch_first_byte": fetch["firstByte"],
                    "fetch_first_text": fetch["firstText"],
                    "fetch_ok": fetch["ok"],
                }
            )
    shown = page.locator("[data-testid=message]").count()
    page.close()
    return rows, settle_sizes, shown


def bench_open(context, base: str, seeded: dict[str, Seeded], opens: int, errors: list[str]):
    big, small = seeded["open1000"], seeded["open10"]
    warm = new_page(context, errors)  # the HTTP cache and the server (not counted)
    for conv in (small, big):
        open_and_wait(warm, conv.url(base), conv.tag)
    warm.close()
    goto: dict[str, list[float]] = {"open10": [], "open1000": []}
    click: dict[str, list[float]] = {"open10": [], "open1000": []}
    for _ in range(opens):
        for name, conv in (("open10", small), ("open1000", big)):
            page = new_page(context, errors)
            page.add_init_script(script=f"({WATCH_LAST_JS})({json.dumps(conv.tag)});")
            page.goto(conv.url(base), wait_until="commit")
            page.wait_for_function("() => window.__open.frame !== null", timeout=30_000)
            goto[name].append(page.evaluate("() => window.__open.frame"))
            page.close()
    page = new_page(context, errors)  # client-side: a click in the sidebar
    open_and_wait(page, small.url(base), small.tag)
    for _ in range(opens):
        for name, conv in (("open1000", big), ("open10", small)):
            page.evaluate(WATCH_LAST_JS, conv.tag)
            item = page.get_by_test_id("conversation-item").filter(has_text=conv.title)
            item.get_by_test_id("conversation-link").click()
            page.wait_for_function("() => window.__open.frame !== null", timeout=30_000)
            click[name].append(page.evaluate("() => window.__open.frame - window.__open.t0"))
            page.wait_for_timeout(300)  # this load's sidebar refresh etc.
    page.close()
    return goto, click


def bench_delta(context, base: str, seeded: dict[str, Seeded], errors: list[str]) -> dict:
    out = {}
    for name in ("delta10", "delta1000"):
        conv = seeded[name]
        page = new_page(context, errors)
        frames: list[str] = []
        capture = {"on": False}
        received_frames(page, frames, capture)
        open_and_wait(page, conv.url(base), conv.tag)
        marker = f"bench-long-{uuid.uuid4().hex[:6]}"
        capture["on"] = True
        send(page, f"Please write a lot {marker} /long", marker)
        page.wait_for_timeout(300)
        capture["on"] = False
        s = page.evaluate("() => window.__send")
        page.close()
        updates, other = [], []
        for text in frames:
            size = len(text.encode())
            if '"stream_text_rx_state_":"' in text and '"messages_rx_state_"' not in text:
                delta = json.loads(text[text.index("[") :])[1]["delta"]
                chat = next(v for k, v in delta.items() if k.endswith("chat_state"))
                updates.append((size, len(chat["stream_text_rx_state_"].encode())))
            else:
                other.append(size)
        out[name] = {"count": conv.count, "updates": updates, "other": other}
        out[name]["visible"] = s["answerFrame"] - s["t0"]
    return out


# -- report -----------------------------------------------------------------------------------


def p50_p99(values: list[float]) -> list[str]:
    vals = [v for v in values if v is not None]
    return [str(len(vals)), fmt_ms(percentile(vals, 50)), fmt_ms(percentile(vals, 99))]


def report(args, send_rows, settle_sizes, shown, goto, click, delta, errors) -> Checks:
    checks = Checks()
    print("\n1. Click-send (instant model, a 10-message conversation; ms from Enter)\n")
    rows = [
        [label, *p50_p99([r[key] for r in send_rows])]
        for label, key in (
            ("answer text visible", "answer"),
            ("anchor: own question visible", "question"),
            ("anchor: fetch execute/stream, first byte", "fetch_first_byte"),
            ("anchor: fetch execute/stream, first 'offline' chunk", "fetch_first_text"),
        )
    ]
    print(table(["measure", "n", "p50 ms", "p99 ms"], rows))
    ok = sum(r["fetch_ok"] for r in send_rows)
    sizes = f"{settle_sizes[0]:,} -> {settle_sizes[-1]:,} B" if settle_sizes else "-"
    print(
        f"\nfetch anchor complete {ok}/{len(send_rows)}; message-list frame when a turn "
        f"settles: {sizes} over {len(settle_sizes)} turns; {shown} messages in the DOM"
    )
    answer, question = (percentile([r[k] for r in send_rows], 50) for k in ("answer", "question"))
    checks.add(
        answer <= TARGET_SEND_MS,
        f"click-send -> first answer text visible p50 <= {TARGET_SEND_MS:.0f} ms: "
        f"{fmt_ms(answer)} ms (own question visible {fmt_ms(question)} ms)",
    )

    print(f"\n2. Opening a conversation ({args.opens} each, interleaved; ms)\n")
    rows = []
    for name, label in (("open10", "10 messages"), ("open1000", "1,000 messages")):
        for how, values in (("page load", goto[name]), ("sidebar click", click[name])):
            rows.append([f"{label}, {how}", *p50_p99(values), fmt_ms(max(values))])
    print(table(["conversation", "n", "p50 ms", "p99 ms", "max ms"], rows))
    big = goto["open1000"]
    checks.add(
        max(big) <= TARGET_OPEN_MS,
        f"open a 1,000-message conversation -> latest message visible <= "
        f"{TARGET_OPEN_MS:.0f} ms (every page load): max {fmt_ms(max(big))} ms "
        f"(10 messages: max {fmt_ms(max(goto['open10']))})",
    )

    print("\n3. State delta per streaming update (20 ms/word, one '/long' answer; bytes)\n")
    rows = []
    for d in delta.values():
        sizes = [s for s, _ in d["updates"]]
        extra = [s - n for s, n in d["updates"]]
        rows.append(
            [
                f"{d['count']:,} messages",
                len(sizes),
                f"{percentile(sizes, 50):,.0f}",
                f"{max(sizes, default=0):,}",
                f"{sum(sizes):,}",
                f"{min(extra, default=0)}-{max(extra, default=0)}",
                f"{len(d['other'])} (max {max(d['other'], default=0):,})",
                fmt_ms(d["visible"]),
            ]
        )
    heads = ["history", "updates", "p50", "max", "sum", "frame - stream_text"]
    print(table([*heads, "other frames", "answer visible ms"], rows))
    s10, s1k = ([s for s, _ in delta[k]["updates"]] for k in ("delta10", "delta1000"))
    checks.add(
        bool(s10 and s1k) and max(s10 + s1k) <= TARGET_DELTA_BYTES,
        f"state delta per streaming update <= 16 KB: max {max(s10, default=0):,} B at 10 "
        f"messages, {max(s1k, default=0):,} B at 1,000",
    )
    checks.add(
        bool(s10 and s1k) and max(s1k) <= 1.1 * max(s10),
        f"delta does not grow with history: max at 1,000 / max at 10 = "
        f"{max(s1k, default=0) / max(max(s10, default=1), 1):.2f}x",
    )
    print(f"\nuncaught page errors: {len(errors)}" + (f" ({errors[:3]})" if errors else ""))
    return checks


# -- main ---------------------------------------------------------------------------------------


def options(parser) -> None:
    parser.add_argument("--samples", type=int, default=30, help="click-send samples")
    parser.add_argument("--opens", type=int, default=5, help="page loads per conversation")
    parser.add_argument("--keep", action="store_true", help="keep the temp folder (logs)")


def main(argv: list[str] | None = None) -> int:
    from playwright.sync_api import sync_playwright

    args = parse_args(__doc__, options, {"samples": 3, "opens": 1}, argv)
    chromium = subprocess.run([CHROMIUM, "--version"], capture_output=True, text=True).stdout
    header(
        "ui.py",
        args,
        f"reflex {version('reflex')}, playwright {version('playwright')}, {chromium.strip()}; "
        "Lumina on sqlite, in-process hot window, demo model; viewport 1280x800",
    )
    scratch = Path(tempfile.mkdtemp(prefix="lumina-bench-ui-"))
    errors: list[str] = []
    started = time.monotonic()
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            context = browser.new_context(viewport={"width": 1280, "height": 800})
            seeded: dict[str, Seeded] = {}
            specs = {"send": 10, "fetch": 10, "open10": 10, "open1000": 1000}
            with server(scratch / "instant", 0, specs, seeded) as app:
                send_rows, settle_sizes, shown = bench_send(
                    context, app.url, seeded, args.samples, errors
                )
                note(f"click-send: {len(send_rows)} samples")
                goto, click = bench_open(context, app.url, seeded, args.opens, errors)
                note(f"open: {args.opens} x 2 page loads, {args.opens} x 2 sidebar clicks")
            with server(scratch / "slow", 20, {"delta10": 10, "delta1000": 1000}, seeded) as app:
                delta = bench_delta(context, app.url, seeded, errors)
            context.close()
            browser.close()
    finally:
        if args.keep:
            print(f"  kept {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    checks = report(args, send_rows, settle_sizes, shown, goto, click, delta, errors)
    checks.print()
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"\n(total {time.monotonic() - started:.0f} s; load average at the end {load})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
