"""UI benchmark: the real app (``reflex run --env prod``) in chromium, driven by Playwright.

    .venv/bin/python bench/ui.py [--samples 30] [--opens 5]

Lumina runs through ``tests/server.py``'s AppServer (frontend + backend, its own temp work
folder, migrated temp SQLite database, a copy of data/agents, in-process hot window,
``LUMINA_REDIS_URL=""``), with the offline demo model (agent ``assistant``). Conversations
are seeded straight into the server's database with ``ColdStore`` before it starts
(alternating USER/ASSISTANT messages, every text distinct, the last one unique).

1. Click-send -> first answer text visible (server with ``LUMINA_DEMO_DELAY_MS=0``). In a
   10-message conversation: fill the composer, install a MutationObserver and a capturing
   ``keydown`` listener in the page, press Enter. t0 = ``performance.now()`` at the Enter
   keydown; "answer in DOM" = the first mutation after which the streaming message, or a new
   assistant message, contains "offline" (the answer starts "**Assistant** here (offline
   demo model)"); "visible" = the next ``requestAnimationFrame`` after that (the frame that
   paints it). All samples go to the same open page (2 warm-up turns first); after each,
   the turn settles and 0.2 s pass. Anchors in the same run, interleaved: the user's own
   question on screen (``pending-message``; the UI round-trip floor), and a ``fetch()`` of
   ``POST /api/v1/agents/assistant/execute/stream`` from the same page (first body byte,
   first chunk containing "offline") in another 10-message conversation. A wrapper around
   ``window.WebSocket`` (init script) time-stamps every frame the page sends and receives,
   which splits the time into client / server / render; the size of the frame that re-sends
   the message list when a turn settles is recorded for every turn.
2. Opening a conversation (same server). ``page.goto`` of a 1,000-message and of a
   10-message conversation, interleaved, each in a new page of one warmed-up browser context
   (HTTP cache warm, as for a returning user). Timed in the page from navigation start
   (``performance.timeOrigin``) until the last ``[data-testid=message]`` contains the last
   message's unique text and lies inside the message list's box (+ the next animation
   frame). Milestones on the way come from the same websocket wrapper, Resource Timing and
   Long Tasks. Also timed: the same switch by clicking the conversation in the sidebar
   (client-side navigation, t0 = the click). PASS needs every 1,000-message sample <= 1 s.
3. State delta per streaming update (second server, ``LUMINA_DEMO_DELAY_MS=20``, so the UI
   flushes every ~50 ms). One "/long" answer (~440 words) in a 10-message and in a
   1,000-message conversation; every websocket frame the browser receives (Playwright
   ``framereceived``), from Enter until the turn settles. Streaming updates = frames whose
   delta carries ``stream_text`` and no message list. Sizes are UTF-8 bytes of the socket.io
   frame's payload as Playwright reports it (before any websocket compression). "Does not
   grow" = the largest update at 1,000 messages <= 1.1x the one at 10, and the same bytes
   around ``stream_text``. The same turn is also timed in the page (one sample).

The script always exits 0: it is a report, the PASS/FAIL lines are for reading. Both
servers are stopped (process group) at the end, also on errors; the temp folder is removed.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from datetime import date
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
for _p in (str(ROOT), str(HERE)):
    if _p not in sys.path:
        sys.path.insert(0, _p)

from _common import fmt_ms, machine_line, percentile, table, verdict  # noqa: E402

from tests.server import AppServer  # noqa: E402

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-dev-shm-usage",
]
AGENT = "assistant"
MARK = "offline"  # the demo answer starts "**Assistant** here (offline demo model)."
PAGE_SIZE = 40  # lumina_app/ui/state/chat.py

TARGET_SEND_MS = 150.0
TARGET_OPEN_MS = 1000.0
TARGET_DELTA_BYTES = 16 * 1024

# -- in-page instrumentation ----------------------------------------------------------------

# Runs before any page script: time-stamps every websocket frame (Reflex's socket.io).
WS_JS = r"""
(() => {
  if (window.__lb) return;
  const B = window.__lb = {ws: [], needles: []};
  const Orig = window.WebSocket;
  class W extends Orig {
    constructor(...args) {
      super(...args);
      this.addEventListener('message', (e) => {
        const d = typeof e.data === 'string' ? e.data : '';
        B.ws.push({t: performance.now(), dir: 'in', n: d.length,
                   hits: B.needles.filter((x) => d.includes(x)),
                   msgs: d.includes('"messages_rx_state_":[{'),
                   vars: [...new Set((d.match(/"\w+?_rx_state_"/g) || [])
                                     .map((v) => v.slice(1, -11)))].slice(0, 8)});
      });
      B.wsOpenCalled = performance.now();
      this.addEventListener('open', () => { B.wsOpen = performance.now(); });
    }
    send(data) {
      const d = typeof data === 'string' ? data : '';
      const name = d.match(/"name":"[^"]*?\.(\w+)"/);
      B.ws.push({t: performance.now(), dir: 'out', n: d.length,
                 hits: B.needles.filter((x) => d.includes(x)), msgs: false,
                 vars: name ? [name[1]] : []});
      return super.send(data);
    }
  }
  window.WebSocket = W;
  B.longtasks = [];
  try {
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) B.longtasks.push([e.startTime, e.duration]);
    }).observe({type: 'longtask', buffered: true});
  } catch (e) { /* no long-task timing */ }
  document.addEventListener('DOMContentLoaded', () => { B.dcl = performance.now(); });
})();
"""

# Watches for the last message of the list to show ``target`` inside the list's box.
WATCH_LAST_JS = """
(target) => {
  const B = window.__lb;
  const W = B.open = {target, dom: null, frame: null, t0: null};
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

SEND_JS = """
([marker, mark]) => {
  const B = window.__lb;
  B.needles = [marker, mark];
  const answers = () => document.querySelectorAll('[data-testid=message][data-role=assistant]');
  const before = answers().length;
  const S = B.send = {t0: null, question: null, questionFrame: null, pendingSeen: false,
                      answer: null, answerFrame: null, viaStreaming: false, ws0: B.ws.length};
  const onKey = (e) => { if (e.key === 'Enter' && S.t0 === null) S.t0 = performance.now(); };
  document.addEventListener('keydown', onKey, true);
  let obs = null;
  const check = () => {
    const now = performance.now();
    if (S.question === null) {
      const p = document.querySelector('[data-testid=pending-message]');
      if (p && p.textContent.includes(marker)) { S.question = now; S.pendingSeen = true; }
      else {
        const u = document.querySelectorAll('[data-testid=message][data-role=user]');
        const l = u[u.length - 1];
        if (l && l.textContent.includes(marker)) S.question = now;
      }
      if (S.question !== null) {
        requestAnimationFrame(() => { S.questionFrame = performance.now(); });
      }
    }
    if (S.answer === null) {
      const s = document.querySelector('[data-testid=streaming-message]');
      let hit = !!(s && s.textContent.includes(mark));
      S.viaStreaming = hit;
      if (!hit) {
        const a = answers();
        hit = a.length > before && a[a.length - 1].textContent.includes(mark);
      }
      if (hit) {
        S.answer = now;
        requestAnimationFrame(() => { S.answerFrame = performance.now(); });
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

OPEN_RESULT_JS = """
() => ({
  ...window.__lb.open, dcl: window.__lb.dcl, ws: window.__lb.ws, wsOpen: window.__lb.wsOpen,
  res: performance.getEntriesByType('resource').map((e) => ({
    name: e.name.split('/').pop(), start: e.startTime, end: e.responseEnd})),
  longtasks: window.__lb.longtasks,
})
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
  return {status: r.status, firstByte, firstText, total: performance.now() - t0,
          done: text.includes('"done": true')};
}
"""

# -- seeding ---------------------------------------------------------------------------------


@dataclass
class Seeded:
    uuid: str
    title: str
    count: int
    last_text: str  # unique, in the last message

    def url(self, base: str) -> str:
        return f"{base}/chat/{AGENT}/{self.uuid}"


def _texts(tag: str, count: int) -> list[tuple[str, str]]:
    """``count`` distinct (role, text) pairs, USER first; the last text holds a unique tag."""
    out = []
    for i in range(count):
        k = i // 2 + 1
        if i % 2 == 0:
            text = (
                f"Question {k} in {tag}: how would you approach step {k} of the migration "
                f"plan, and what should I check before moving on to step {k + 1}?"
            )
            out.append(("user", text))
        else:
            text = (
                f"Answer {k} in {tag}: here is how I would go about step {k}.\n\n"
                f"1. **Check** the current state of item {k} and note what depends on it.\n"
                f"2. Make the change in a small, reversible commit (area {k % 17}).\n"
                f"3. Run the tests for area {k % 17} and compare with the last run.\n\n"
                f"That keeps step {k} small enough to review in one sitting."
            )
            out.append(("assistant", text))
    unique = f"LATEST-{tag}-{uuid.uuid4().hex[:10]}"
    role, text = out[-1]
    out[-1] = (role, f"{unique} {text}")
    return out


def seed(database_url: str, specs: dict[str, int]) -> dict[str, Seeded]:
    """One conversation per spec (name -> message count) in the server's database."""
    from lumina_app.domain.types import Msg
    from lumina_app.settings import load_settings
    from lumina_app.storage.sql.cold_store import ColdStore
    from lumina_app.storage.sql.database import SQLDatabase
    from lumina_app.storage.sql.engine import create_engine

    async def run() -> dict[str, Seeded]:
        engine = create_engine(load_settings(database_url=database_url).async_database_url)
        cold = ColdStore(SQLDatabase(engine))
        out = {}
        try:
            for name, count in specs.items():
                title = f"bench {name} ({count} messages)"
                conv = await cold.create_conversation(agent_id=AGENT, title=title)
                texts = _texts(name, count)
                msgs = [
                    (Msg.user if role == "user" else Msg.assistant)(text, turn_id=f"t{i // 2}")
                    for i, (role, text) in enumerate(texts)
                ]
                for start in range(0, len(msgs), 500):
                    await cold.append_messages(conv.id, msgs[start : start + 500])
                out[name] = Seeded(conv.uuid, title, count, texts[-1][1].split(" ", 1)[0])
        finally:
            await engine.dispose()
        return out

    # In a thread: Playwright's sync API keeps an event loop running in this one.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, run()).result()


# -- helpers ----------------------------------------------------------------------------------


def stats(values: list[float]) -> tuple[float, float, float, float]:
    vals = [v for v in values if v is not None]
    if not vals:
        nan = float("nan")
        return nan, nan, nan, nan
    return percentile(vals, 50), percentile(vals, 99), min(vals), max(vals)


def after(ws: list[dict], sent: float | None, pick) -> float | None:
    """ms from ``sent`` to the first received frame that ``pick`` accepts."""
    if sent is None:
        return None
    hit = next((f["t"] for f in ws if f["dir"] == "in" and f["t"] > sent and pick(f)), None)
    return None if hit is None else hit - sent


def fmt_bytes(n: float) -> str:
    return "-" if n != n else f"{n:,.0f}"


def start_server(workdir: Path, delay_ms: int, specs: dict[str, int]) -> tuple[AppServer, dict]:
    server = AppServer(
        workdir,
        backend_only=False,
        env={"LUMINA_DEMO_DELAY_MS": str(delay_ms), "LUMINA_REDIS_URL": ""},
    )
    server.prepare()  # migrated database first, so the seed lands before the app reads it
    t = time.monotonic()
    seeded = seed(server.database_url, specs)
    seed_s = time.monotonic() - t
    t = time.monotonic()
    server.start()
    print(
        f"  server {server.url} (demo delay {delay_ms} ms): seeded {sum(specs.values()):,} "
        f"messages in {seed_s:.1f} s, started in {time.monotonic() - t:.1f} s",
        flush=True,
    )
    return server, seeded


def new_page(context, errors: list[str]):
    page = context.new_page()
    page.set_default_timeout(20_000)
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    return page


def wait_settled(page, before: int) -> None:
    from playwright.sync_api import expect

    expect(page.locator("[data-testid=message][data-role=assistant]")).to_have_count(
        before + 1, timeout=60_000
    )
    expect(page.get_by_test_id("send-button")).to_be_visible(timeout=20_000)


def open_and_wait(page, url: str, last_text: str) -> None:
    from playwright.sync_api import expect

    page.goto(url)
    expect(page.locator("[data-testid=message]").last).to_contain_text(last_text)
    expect(page.get_by_test_id("composer")).to_be_visible()


# -- 1. click-send --------------------------------------------------------------------------


def bench_send(context, base: str, seeded: dict[str, Seeded], samples: int, errors: list[str]):
    page = new_page(context, errors)
    settle_frames: list[int] = []
    capture = {"on": False}

    def on_ws(ws) -> None:
        def on_frame(payload) -> None:
            text = payload if isinstance(payload, str) else payload.decode("utf-8", "replace")
            if capture["on"] and '"messages_rx_state_":[{' in text:
                settle_frames.append(len(text.encode()))

        ws.on("framereceived", on_frame)

    page.on("websocket", on_ws)
    conv, anchor_conv = seeded["send"], seeded["fetch"]
    open_and_wait(page, conv.url(base), conv.last_text)
    composer = page.get_by_test_id("composer")
    rows = []
    trace: list = []
    api = f"{base}/api/v1/agents/{AGENT}/execute/stream"
    for i in range(samples + 2):  # 2 warm-up rounds
        marker = f"bench-q{i}-{uuid.uuid4().hex[:6]}"
        composer.fill(f"Quick question {marker}: what changed since the last step?")
        before = page.evaluate(SEND_JS, [marker, MARK])
        capture["on"] = True
        composer.press("Enter")
        page.wait_for_function(
            "() => window.__lb.send.answerFrame !== null"
            " && window.__lb.send.questionFrame !== null",
            timeout=30_000,
        )
        wait_settled(page, before)
        page.wait_for_timeout(200)  # sidebar refresh + health check after the turn
        capture["on"] = False
        s = page.evaluate(
            "() => ({...window.__lb.send, ws: window.__lb.ws.slice(window.__lb.send.ws0)})"
        )
        ws = s["ws"]
        sent = next((f["t"] for f in ws if f["dir"] == "out" and marker in f["hits"]), None)
        q_in = next((f["t"] for f in ws if f["dir"] == "in" and marker in f["hits"]), None)
        a_in = next(
            (
                f["t"]
                for f in ws
                if f["dir"] == "in" and MARK in f["hits"] and sent and f["t"] > sent
            ),
            None,
        )
        settle = next((f["t"] for f in ws if f["dir"] == "in" and f["msgs"]), None)
        fetch = page.evaluate(
            FETCH_JS, [api, {"task": f"anchor {marker}", "conversationId": anchor_conv.uuid}, MARK]
        )
        if i < 2:
            continue
        t0 = s["t0"]
        rows.append(
            {
                "question": s["questionFrame"] - t0,
                "question_dom": s["question"] - t0,
                "pending_seen": s["pendingSeen"],
                "answer": s["answerFrame"] - t0,
                "answer_dom": s["answer"] - t0,
                "via_streaming": s["viaStreaming"],
                "client": (sent - t0) if sent else None,
                "server_q": (q_in - sent) if sent and q_in else None,
                "server_a": (a_in - sent) if sent and a_in else None,
                "run_in": after(ws, sent, lambda f: "run_id" in f["vars"] and not f["msgs"]),
                "sidebar_in": after(ws, sent, lambda f: "conversations" in f["vars"]),
                "stream_in": after(ws, sent, lambda f: f["vars"] == ["stream_text"]),
                "render_a": (s["answer"] - a_in) if a_in else None,
                "fetch_first_byte": fetch["firstByte"],
                "fetch_first_text": fetch["firstText"],
                "fetch_total": fetch["total"],
                "fetch_ok": fetch["status"] == 200 and fetch["done"],
                "settled": (settle - t0) if settle else None,
            }
        )
        trace = [(f["t"] - t0, f["dir"], f["n"], ",".join(f["vars"])) for f in ws]
    dom_messages = page.locator("[data-testid=message]").count()
    page.close()
    return rows, settle_frames, dom_messages, trace


# -- 2. opening a conversation ----------------------------------------------------------------


def bench_open(context, base: str, seeded: dict[str, Seeded], opens: int, errors: list[str]):
    big, small = seeded["open1000"], seeded["open10"]
    warm = new_page(context, errors)  # warm the HTTP cache and the server (not counted)
    open_and_wait(warm, small.url(base), small.last_text)
    open_and_wait(warm, big.url(base), big.last_text)
    warm.close()
    goto: dict[str, list[dict]] = {"open10": [], "open1000": []}
    for _ in range(opens):
        for name, conv in (("open10", small), ("open1000", big)):
            page = new_page(context, errors)
            page.add_init_script(
                script=f"{WS_JS}\n({WATCH_LAST_JS})({json.dumps(conv.last_text)});"
            )
            t = time.perf_counter()
            page.goto(conv.url(base), wait_until="commit")
            page.wait_for_function("() => window.__lb.open.frame !== null", timeout=30_000)
            wall = (time.perf_counter() - t) * 1000
            page.wait_for_timeout(150)  # long-task entries are delivered asynchronously
            r = page.evaluate(OPEN_RESULT_JS)
            shown = page.locator("[data-testid=message]").count()
            msgs_in = next((f for f in r["ws"] if f["dir"] == "in" and f["msgs"]), None)
            hydrate = next((f for f in r["ws"] if f["dir"] == "out" and f["vars"]), None)
            # The route's code chunk (/chat/[agent]/[conversation]), loaded on demand.
            scripts = [x for x in r["res"] if x["name"].endswith(".js") and x["end"] <= r["dom"]]
            route = next((x for x in scripts if "_conversation_" in x["name"]), None)
            # Main-thread long tasks (> 50 ms) between the list frame and the list on screen.
            busy = None
            if msgs_in:
                lo, hi = msgs_in["t"], r["frame"]
                busy = sum(max(0.0, min(t + d, hi) - max(t, lo)) for t, d in r["longtasks"])
            goto[name].append(
                {
                    "dcl": r["dcl"],
                    "ws_open": r["wsOpen"],
                    "route_start": route["start"] if route else None,
                    "route_end": route["end"] if route else None,
                    "hydrate_out": hydrate["t"] if hydrate else None,
                    "msgs_in": msgs_in["t"] if msgs_in else None,
                    "dom": r["dom"],
                    "frame": r["frame"],
                    "busy": busy,
                    "after_list": (r["frame"] - msgs_in["t"]) if msgs_in else None,
                    "wall": wall,
                    "msgs_chars": msgs_in["n"] if msgs_in else None,
                    "shown": shown,
                }
            )
            page.close()
    # Client-side switch: click the conversation in the sidebar.
    click: dict[str, list[dict]] = {"open10": [], "open1000": []}
    page = new_page(context, errors)
    page.add_init_script(script=WS_JS)
    open_and_wait(page, small.url(base), small.last_text)
    for _ in range(opens):
        for name, conv in (("open1000", big), ("open10", small)):
            page.evaluate(WATCH_LAST_JS, conv.last_text)
            item = page.get_by_test_id("conversation-item").filter(has_text=conv.title)
            item.get_by_test_id("conversation-link").click()
            page.wait_for_function("() => window.__lb.open.frame !== null", timeout=30_000)
            r = page.evaluate("() => window.__lb.open")
            click[name].append({"frame": r["frame"] - r["t0"], "dom": r["dom"] - r["t0"]})
            page.wait_for_timeout(300)  # sidebar refresh etc. of this load
    page.close()
    return goto, click


# -- 3. state delta per streaming update --------------------------------------------------------


def bench_delta(context, base: str, seeded: dict[str, Seeded], errors: list[str]):
    out = {}
    for name in ("delta10", "delta1000"):
        conv = seeded[name]
        page = new_page(context, errors)
        frames: list[tuple[float, str]] = []
        capture = {"on": False}

        def on_ws(ws, frames=frames, capture=capture) -> None:
            def on_frame(payload) -> None:
                if capture["on"]:
                    text = (
                        payload if isinstance(payload, str) else payload.decode("utf-8", "replace")
                    )
                    frames.append((time.monotonic(), text))

            ws.on("framereceived", on_frame)

        page.on("websocket", on_ws)
        t = time.monotonic()
        open_and_wait(page, conv.url(base), conv.last_text)
        hydrate_ms = (time.monotonic() - t) * 1000
        shown = page.locator("[data-testid=message]").count()
        before = page.locator("[data-testid=message][data-role=assistant]").count()
        marker = f"bench-long-{uuid.uuid4().hex[:6]}"
        page.get_by_test_id("composer").fill(f"Please write a lot {marker} /long")
        page.evaluate(SEND_JS, [marker, MARK])
        capture["on"] = True
        page.get_by_test_id("composer").press("Enter")
        wait_settled(page, before)
        timing = page.evaluate(
            "() => { const S = window.__lb.send; const f = window.__lb.ws.slice(S.ws0).find("
            "(x) => x.dir === 'in' && x.vars.length === 1 && x.vars[0] === 'stream_text');"
            " return {answer: S.answerFrame - S.t0, question: S.questionFrame - S.t0,"
            " stream: f ? f.t - S.t0 : null}; }"
        )
        page.wait_for_timeout(300)
        capture["on"] = False
        page.close()
        stream, other = [], []
        first_stream_text = ""
        for _, text in frames:
            size = len(text.encode())
            is_stream = '"stream_text_rx_state_":"' in text and '"messages_rx_state_"' not in text
            if is_stream and '"stream_text_rx_state_":""' not in text:
                body = json.loads(text[text.index("[") :])[1]["delta"]
                chat = next(v for k, v in body.items() if k.endswith("chat_state"))
                keys = sorted(chat)
                stream_len = len(chat["stream_text_rx_state_"].encode())
                if not stream:
                    first_stream_text = chat["stream_text_rx_state_"]
                stream.append((size, stream_len, keys))
            else:
                names = re.findall(r'"(\w+?)_rx_state_"', text)
                other.append((size, ", ".join(dict.fromkeys(names))))
        out[name] = {
            "conv": conv,
            "shown": shown,
            "hydrate_ms": hydrate_ms,
            "stream": stream,
            "other": other,
            "total_frames": len(frames),
            "first_stream_ms": timing["stream"],
            "first_visible_ms": timing["answer"],
            "question_ms": timing["question"],
            "first_stream_text": first_stream_text,
        }
    return out


# -- main ------------------------------------------------------------------------------------


def chromium_version() -> str:
    try:
        return subprocess.run(
            [CHROMIUM, "--version"], capture_output=True, text=True, timeout=20
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "chromium ?"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=30, help="click-send samples (default 30)")
    parser.add_argument(
        "--opens", type=int, default=5, help="page loads per conversation (default 5)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the temp folder (server logs)")
    args = parser.parse_args()

    from importlib.metadata import version

    from playwright.sync_api import sync_playwright

    print(f"== bench/ui.py --samples {args.samples} --opens {args.opens}")
    print(f"date: {date.today().isoformat()}   machine: {machine_line()}")
    print(
        f"python {platform.python_version()}, reflex {version('reflex')}, playwright "
        f"{version('playwright')}, {chromium_version()}; Lumina on sqlite, in-process hot "
        f"window, demo model; viewport 1280x800",
        flush=True,
    )
    scratch = Path(tempfile.mkdtemp(prefix="lumina-bench-ui-"))
    servers: list[AppServer] = []
    errors: list[str] = []
    t_start = time.monotonic()
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            context = browser.new_context(viewport={"width": 1280, "height": 800})
            context.add_init_script(script=WS_JS)

            fast, fast_seed = start_server(
                scratch / "instant", 0, {"send": 10, "fetch": 10, "open10": 10, "open1000": 1000}
            )
            servers.append(fast)
            send_rows, settle_frames, dom_messages, trace = bench_send(
                context, fast.url, fast_seed, args.samples, errors
            )
            print(f"  click-send: {len(send_rows)} samples", flush=True)
            goto, click = bench_open(context, fast.url, fast_seed, args.opens, errors)
            print(
                f"  open: {args.opens} x 2 page loads, {args.opens} x 2 sidebar clicks", flush=True
            )
            fast.stop()

            slow, slow_seed = start_server(scratch / "slow", 20, {"delta10": 10, "delta1000": 1000})
            servers.append(slow)
            delta = bench_delta(context, slow.url, slow_seed, errors)
            slow.stop()
            context.close()
            browser.close()
    finally:
        for server in servers:
            server.stop()
        if args.keep:
            print(f"  kept {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    wall_s = time.monotonic() - t_start
    report(args, send_rows, settle_frames, dom_messages, trace, goto, click, delta, errors, wall_s)


def report(
    args, send_rows, settle_frames, dom_messages, trace, goto, click, delta, errors, wall_s
) -> None:
    targets: list[tuple[bool, str]] = []

    # 1.
    print(
        "\n1. Click-send -> first answer text visible (instant demo model, "
        f"{len(send_rows)} samples, a 10-message conversation; ms from the Enter keydown)\n"
    )
    lines = [
        ("answer text visible (next frame)", "answer"),
        ("answer text in DOM", "answer_dom"),
        ("anchor: own question visible (next frame)", "question"),
        ("anchor: own question in DOM", "question_dom"),
        ("anchor: fetch execute/stream, first byte", "fetch_first_byte"),
        ("anchor: fetch execute/stream, first 'offline' chunk", "fetch_first_text"),
        ("anchor: fetch execute/stream, whole stream", "fetch_total"),
    ]
    rows = []
    for label, key in lines:
        p50, p99, lo, hi = stats([r[key] for r in send_rows])
        rows.append((label, len(send_rows), fmt_ms(p50), fmt_ms(p99), fmt_ms(lo), fmt_ms(hi)))
    print(table(["measure", "n", "p50 ms", "p99 ms", "min ms", "max ms"], rows))
    print("\nWhere the answer's time goes (page-side websocket time stamps, p50 / p99 ms):\n")
    split = [
        ("Enter -> send event leaves the page (client)", "client"),
        ("send frame out -> question echo frame in (server)", "server_q"),
        ("send frame out -> first frame with answer text in (server)", "server_a"),
        ("  of which: send frame out -> run_id/title frame in (run started)", "run_in"),
        ("  of which: send frame out -> sidebar refresh frame in", "sidebar_in"),
        ("  of which: send frame out -> first stream_text-only frame in", "stream_in"),
        ("answer frame in -> answer text in DOM (render)", "render_a"),
        ("Enter -> settled message list frame in", "settled"),
    ]
    rows = []
    for label, key in split:
        p50, p99, _, _ = stats([r[key] for r in send_rows])
        rows.append((label, fmt_ms(p50), fmt_ms(p99)))
    print(table(["part", "p50 ms", "p99 ms"], rows))
    pend = sum(1 for r in send_rows if r["pending_seen"])
    via = sum(1 for r in send_rows if r["via_streaming"])
    fetch_ok = sum(1 for r in send_rows if r["fetch_ok"])
    print(
        f"\npending-message rendered in {pend}/{len(send_rows)} samples (else the question was "
        f"first seen in the settled list); answer first seen in the streaming bubble in {via}/"
        f"{len(send_rows)}; fetch anchor complete (200 + done) {fetch_ok}/{len(send_rows)}."
    )
    if settle_frames:
        print(
            "Settle frames (the message list re-sent when a turn ends): first "
            f"{settle_frames[0]:,} B, last {settle_frames[-1]:,} B over {len(settle_frames)} "
            f"turns; messages in the DOM at the end: {dom_messages} (page size {PAGE_SIZE})."
        )
    print("\nThe websocket frames of the last sample (ms from Enter; vars named in the frame):\n")
    print(
        table(
            ["ms", "dir", "chars", "event / vars"],
            [(fmt_ms(t), d, f"{n:,}", v) for t, d, n, v in trace],
        )
    )
    p50 = stats([r["answer"] for r in send_rows])[0]
    q50 = stats([r["question"] for r in send_rows])[0]
    targets.append(
        (
            p50 <= TARGET_SEND_MS,
            f"click-send -> first answer text visible p50 <= {TARGET_SEND_MS:.0f} ms: "
            f"{fmt_ms(p50)} ms (own question visible {fmt_ms(q50)} ms)",
        )
    )

    # 2.
    print(
        f"\n2. Opening a conversation ({args.opens} page loads each, interleaved, warm HTTP cache; "
        "ms from navigation start)\n"
    )
    milestones = [
        ("DOMContentLoaded", "dcl"),
        ("websocket open", "ws_open"),
        ("route chunk (/chat/[agent]/[conversation]) requested", "route_start"),
        ("route chunk loaded", "route_end"),
        ("hydrate event sent", "hydrate_out"),
        ("frame with the message list received", "msgs_in"),
        ("latest message in DOM", "dom"),
        ("latest message visible (next frame)", "frame"),
        ("Playwright wall clock, goto -> detected", "wall"),
        ("list frame received -> latest message visible (duration)", "after_list"),
        ("  main-thread long tasks in that interval (sum)", "busy"),
    ]
    rows = []
    for label, key in milestones:
        cells = [label]
        for name in ("open10", "open1000"):
            p50, _, lo, hi = stats([x[key] for x in goto[name]])
            cells.append(f"{fmt_ms(p50)} ({fmt_ms(lo)}-{fmt_ms(hi)})")
        rows.append(cells)
    for label, fn in (
        ("messages shown", lambda xs: "/".join(map(str, sorted({x["shown"] for x in xs})))),
        (
            "message-list frame, chars",
            lambda xs: fmt_bytes(stats([x["msgs_chars"] for x in xs])[0]),
        ),
    ):
        rows.append([label, fn(goto["open10"]), fn(goto["open1000"])])
    print(
        table(
            ["milestone, ms from navigation start: p50 (min-max)", "10 messages", "1,000 messages"],
            rows,
        )
    )
    print(
        "\nThe same switch by a click in the sidebar (client-side navigation; ms from the click):\n"
    )
    rows = []
    for name, label in (("open10", "10 messages"), ("open1000", "1,000 messages")):
        r = click[name]
        f50, _, _, fmax = stats([x["frame"] for x in r])
        d50 = stats([x["dom"] for x in r])[0]
        rows.append((label, len(r), fmt_ms(f50), fmt_ms(fmax), fmt_ms(d50)))
    print(table(["conversation", "n", "visible p50", "visible max", "in DOM p50"], rows))
    big = [x["frame"] for x in goto["open1000"]]
    small = [x["frame"] for x in goto["open10"]]
    targets.append(
        (
            max(big) <= TARGET_OPEN_MS,
            f"open a 1,000-message conversation -> latest message visible <= "
            f"{TARGET_OPEN_MS:.0f} ms (every sample): p50 {fmt_ms(percentile(big, 50))}, "
            f"max {fmt_ms(max(big))} ms (10 messages: p50 {fmt_ms(percentile(small, 50))}, "
            f"max {fmt_ms(max(small))})",
        )
    )

    # 3.
    print(
        "\n3. State delta per streaming update (demo model at 20 ms/word, one '/long' answer; "
        "UTF-8 bytes of each received socket.io frame)\n"
    )
    rows = []
    for name in ("delta10", "delta1000"):
        d = delta[name]
        sizes = [s for s, _, _ in d["stream"]]
        over = [s - n for s, n, _ in d["stream"]]
        keys = sorted({k for _, _, ks in d["stream"] for k in ks})
        other_max = max((s for s, _ in d["other"]), default=0)
        rows.append(
            (
                f"{d['conv'].count:,} messages ({d['shown']} shown)",
                len(sizes),
                fmt_bytes(percentile(sizes, 50)),
                fmt_bytes(max(sizes)) if sizes else "-",
                fmt_bytes(sum(sizes)),
                fmt_bytes(max((n for _, n, _ in d["stream"]), default=0)),
                f"{min(over)}-{max(over)}" if over else "-",
                ", ".join(k.replace("_rx_state_", "") for k in keys),
                f"{len(d['other'])} (max {other_max:,} B)",
            )
        )
    print(
        table(
            [
                "history",
                "streaming frames",
                "p50 B",
                "max B",
                "sum B",
                "final stream_text B",
                "frame - stream_text B",
                "vars in the delta",
                "other frames",
            ],
            rows,
        )
    )
    for name in ("delta10", "delta1000"):
        print(f"\n  other frames received during the {delta[name]['conv'].count:,}-message turn:")
        for size, names in delta[name]["other"]:
            print(f"    {size:>6,} B  {names}")
    for name in ("delta10", "delta1000"):
        d = delta[name]
        print(
            f"\n  at {d['conv'].count:,} messages (ms from the Enter keydown, in the page): own "
            f"question visible {fmt_ms(d['question_ms'])}, first stream_text frame in "
            f"{fmt_ms(d['first_stream_ms'])}, answer text visible {fmt_ms(d['first_visible_ms'])};"
            f" the first update carried "
            f"{json.dumps(d['first_stream_text'], ensure_ascii=False)}"
        )
    s10 = [s for s, _, _ in delta["delta10"]["stream"]]
    s1k = [s for s, _, _ in delta["delta1000"]["stream"]]
    ok = bool(s10 and s1k) and max(s1k + s10) <= TARGET_DELTA_BYTES
    targets.append(
        (
            ok,
            "state delta per streaming update <= 16 KB: max "
            f"{max(s10, default=0):,} B at 10 messages, {max(s1k, default=0):,} B at 1,000",
        )
    )
    over10 = {s - n for s, n, _ in delta["delta10"]["stream"]}
    over1k = {s - n for s, n, _ in delta["delta1000"]["stream"]}
    flat = bool(s10 and s1k) and max(s1k) <= 1.1 * max(s10) and max(over1k) <= max(over10) + 16
    targets.append(
        (
            flat,
            "delta does not grow with history length: 1,000/10 max ratio "
            f"{max(s1k, default=0) / max(max(s10, default=1), 1):.2f}x, frame "
            f"overhead beyond stream_text {min(over1k, default=0)}-"
            f"{max(over1k, default=0)} B vs {min(over10, default=0)}-"
            f"{max(over10, default=0)} B",
        )
    )

    print(f"\nuncaught page errors: {len(errors)}" + (f" ({errors[:3]})" if errors else ""))
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"wall time: {wall_s:.0f} s; load average at the end {load}")
    print("\nTargets:\n")
    for ok, line in targets:
        print(f"  {verdict(ok)}  {line}")
    print(f"\n{sum(ok for ok, _ in targets)}/{len(targets)} targets met.")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
