// The composer's side in the browser (#45): what a person types is never lost.
// - The draft is kept per conversation in localStorage on every keystroke, and put back
//   when the composer appears again (a reload, the page's own loading, a switch back).
// - Enter sends; during an answer it keeps the text (the hint says why), never clears it.
// - A send is offered to the server, which asks back (accept) before it starts: a send
//   that got no answer within a few seconds is shown "Not sent" with Retry, and if the
//   queued event reaches the server later it is refused, never sent silently.
// - Files (#48): a drop on the chat column and a pasted file are handed to the paperclip's
//   upload (react-dropzone), so they take the same path as the picker; a message may be
//   files only; while a file uploads, Send says so and keeps everything.
// - Esc stops an answer; Ctrl/Cmd+Shift+O opens a new conversation; the character count
//   shows near the cap; "Jump to latest" when scrolled up; the tab title follows the
//   conversation's title; "Back" once the connection returns (and the page refreshes).
(() => {
  if (window.__lumina) return;
  const L = (window.__lumina = {});
  const DRAFT = "lumina:draft:";
  const ACK_MS = 4000;
  const $ = (id) => document.getElementById(id);
  const byTest = (id) => document.querySelector(`[data-testid="${id}"]`);
  const path = () => location.pathname.replace(/\/+$/, "") || "/";
  const store = {
    get: (k) => { try { return localStorage.getItem(k) || ""; } catch { return ""; } },
    set: (k, v) => { try { v ? localStorage.setItem(k, v) : localStorage.removeItem(k); } catch {} },
  };
  const draftKey = (p) => DRAFT + (p || path());
  const streaming = () => !!byTest("stop-button");
  const uploading = () => !!byTest("attach-uploading");
  const attached = () => { const f = document.querySelector("input[name=files]"); return !!(f && f.value); };
  const sendable = (el) => !!(el.value.trim() || attached());
  const offline = () => !!document.querySelector("[data-lumina-offline]");
  // Elements the script shows and hides carry .lumina-hidden (display: none unless shown).
  const visible = (el, on) => { if (el) el.classList.toggle("lumina-shown", !!on); };

  let box = null, boxPath = path(), offered = null, abandoned = new Set();

  function setValue(el, value) {
    // Through the native setter, so React's idea of the value follows.
    const set = Object.getOwnPropertyDescriptor(HTMLTextAreaElement.prototype, "value").set;
    set.call(el, value);
    el.dispatchEvent(new Event("input", { bubbles: true }));
  }

  function count(el) {
    const out = byTest("composer-count");
    if (!el || !out) return;
    const max = Number(el.getAttribute("maxlength")) || 32000;
    const n = el.value.length;
    visible(out, n >= max * 0.8);
    // An attribute (shown by CSS), not text: React's hydration must find its own text.
    out.dataset.count = `${n.toLocaleString("en")} / ${max.toLocaleString("en")}`;
    out.dataset.full = n >= max ? "1" : "";
  }

  function save(el) {
    store.set(draftKey(), el.value);
    count(el);
  }

  function unsent(show) {
    visible(byTest("unsent"), show);
  }

  // The composer as it is now: a new element (first render, hydration, remount) gets the
  // draft back; a new address (another conversation) gets that conversation's draft.
  function check() {
    const el = $("composer");
    if (!el) { box = null; return; }
    const here = path();
    if (el !== box) {
      const first = box === null;
      if (here !== boxPath && movedOn(boxPath, here)) carry(boxPath, here);
      box = el;
      boxPath = here;
      const draft = store.get(draftKey());
      if (el.value && !draft) store.set(draftKey(), el.value);
      else if (draft && el.value !== draft && el.value.length <= draft.length) setValue(el, draft);
      count(el);
      // A new composer (first render, or one rendered again) takes the keys, at the end.
      if (focus(el) && !first) el.setSelectionRange(el.value.length, el.value.length);
    } else if (here !== boxPath) {
      const from = boxPath;
      boxPath = here;
      const arriving = movedOn(from, here);
      if (arriving) { store.set(draftKey(from), ""); store.set(draftKey(here), el.value); }
      const draft = arriving ? el.value : store.get(draftKey());
      if (el.value !== draft) setValue(el, draft);
      unsent(false);
      count(el);
      focus(el);
    } else if (!el.value && store.get(draftKey())) {
      setValue(el, store.get(draftKey()));  // cleared by something other than a send
    }
    title();
    jumpButton();
  }

  // The page's own moves keep what was typed: "/" on to the first agent's chat (a new
  // page, so a new composer), and /chat/<agent> on to its new conversation.
  function movedOn(from, to) {
    if (from === "/") return to.startsWith("/chat/");
    return from.split("/").length === 3 && to.startsWith(from + "/");
  }

  function carry(from, to) {
    const draft = store.get(draftKey(from));
    if (draft && !store.get(draftKey(to))) store.set(draftKey(to), draft);
    store.set(draftKey(from), "");
  }

  function focus(el) {
    const other = document.activeElement;
    if (other && other !== document.body && other.tagName !== "A") return false;
    if (matchMedia("(pointer: coarse)").matches) return false;  // no keyboard popping up
    el.focus();
    return true;
  }

  function title() {
    const h = byTest("conversation-title");
    if (!h) return;
    const want = `${h.textContent.trim() || "Lumina"} · Lumina`;
    if (document.title !== want) document.title = want;
  }

  // -- sending ----------------------------------------------------------------------------
  function trySend() {
    const el = $("composer");
    if (!el || !sendable(el)) return;
    if (busy()) { waitForUpload(); return; }
    if (streaming()) {
      const hint = byTest("composer-hint");
      if (hint) { hint.dataset.flash = "1"; setTimeout(() => (hint.dataset.flash = ""), 600); }
      return;
    }
    el.form && el.form.requestSubmit();
  }

  // Every submit of the composer's form passes here first (capture, before React).
  window.addEventListener("submit", (ev) => {
    const form = ev.target;
    if (!form || !form.querySelector || !form.querySelector("#composer")) return;
    const el = $("composer");
    const nonce = `${Date.now()}-${Math.random().toString(36).slice(2)}`;
    const field = form.querySelector("input[name=nonce]");
    if (!sendable(el) || streaming() || offline() || busy()) {
      ev.preventDefault();
      ev.stopPropagation();
      if (offline() && sendable(el)) unsent(true);
      else if (busy() && sendable(el)) waitForUpload();
      return;
    }
    if (field) field.value = nonce;
    if (offered) abandoned.add(offered.nonce);
    offered = { nonce, text: el.value, timer: setTimeout(() => giveUp(nonce), ACK_MS) };
    unsent(false);
  }, true);

  function giveUp(nonce) {
    if (!offered || offered.nonce !== nonce) return;
    abandoned.add(nonce);
    offered = null;
    unsent(true);
  }

  // Called by the server before it starts a run: false if this page gave up on the send.
  L.accept = (nonce) => {
    if (abandoned.has(nonce) || !offered || offered.nonce !== nonce) return false;
    clearTimeout(offered.timer);
    const sent = offered.text;
    offered = null;
    const el = $("composer");
    if (el) {  // what was typed after Enter stays
      const rest = el.value.startsWith(sent) ? el.value.slice(sent.length).trimStart() : el.value;
      setValue(el, rest);
      store.set(draftKey(), el.value);
    }
    unsent(false);
    const list = $("message-list");
    if (list) list.scrollTo({ top: list.scrollHeight * 2, behavior: "instant" });
    if (list && list.scrollTop < 0) list.scrollTop = 0;  // column-reverse: 0 is the end
    return true;
  };

  // A send the server could not start (busy, unreachable store): its words come back.
  L.restore = (text) => {
    const el = $("composer");
    if (el && !el.value.trim()) { setValue(el, text); store.set(draftKey(), text); count(el); }
  };

  // The server would not take it (a file still uploading, a file not attached here): the
  // reason is shown by the page, the words stay.
  L.withdraw = (nonce) => {
    if (offered && offered.nonce === nonce) { clearTimeout(offered.timer); offered = null; }
    abandoned.add(nonce);
    return false;
  };

  L.retry = () => { unsent(false); trySend(); };
  L.dismiss = () => unsent(false);

  // -- files ----------------------------------------------------------------------------
  function waitForUpload() {
    const note = byTest("wait-upload");
    visible(note, true);
    clearTimeout(L.waitTimer);
    L.waitTimer = setTimeout(() => visible(note, false), 4000);
  }

  // Reflex's upload takes one request at a time and silently drops a second one begun
  // before the first has ended: files picked, dropped or pasted meanwhile wait here, and
  // go as the next drop on the paperclip's dropzone once it has.
  let inFlight = 0, waiting = [];
  const xhrOpen = XMLHttpRequest.prototype.open;
  XMLHttpRequest.prototype.open = function (method, url, ...rest) {
    if (String(url).endsWith("/_upload")) {
      inFlight += 1;
      this.addEventListener("loadend", () => { inFlight -= 1; setTimeout(nextUpload, 0); });
    }
    return xhrOpen.call(this, method, url, ...rest);
  };
  const busy = () => inFlight > 0 || waiting.length > 0 || uploading();

  function nextUpload() {
    if (inFlight > 0 || !waiting.length) return;
    const files = waiting;
    waiting = [];
    handOver(files);
  }

  // Files dropped or pasted anywhere on the chat go to the paperclip's dropzone, as a drop.
  function handOver(files) {
    const zone = byTest("attach-zone");
    if (!zone || !files || !files.length) return;
    if (inFlight > 0) { waiting.push(...files); return; }
    const moved = new DataTransfer();
    for (const f of files) moved.items.add(f);
    zone.dispatchEvent(new DragEvent("drop", { bubbles: true, cancelable: true, dataTransfer: moved }));
  }

  // The picker's choice while an upload is in flight waits its turn too.
  document.addEventListener("change", (ev) => {
    const input = ev.target;
    if (!input || input.type !== "file" || !input.closest('[data-testid="attach-zone"]')) return;
    if (inFlight === 0) return;
    ev.stopPropagation();
    waiting.push(...input.files);
    input.value = "";
  }, true);

  const withFiles = (ev) => !!(ev.dataTransfer && [...ev.dataTransfer.types].includes("Files"));
  const inChat = (ev) => !!(ev.target && ev.target.closest && ev.target.closest("#chat-column"));
  const inZone = (ev) => !!(ev.target.closest && ev.target.closest('[data-testid="attach-zone"]'));
  let hintTimer = null;
  function dropHint(show) {
    visible(byTest("drop-hint"), show);
    clearTimeout(hintTimer);
    if (show) hintTimer = setTimeout(() => visible(byTest("drop-hint"), false), 250);
  }
  document.addEventListener("dragover", (ev) => {
    if (!withFiles(ev) || !inChat(ev)) return;
    ev.preventDefault();  // a drop target
    dropHint(true);
  }, true);
  document.addEventListener("drop", (ev) => {
    if (!withFiles(ev) || !inChat(ev)) return;
    if (inZone(ev) && (!ev.isTrusted || inFlight === 0)) return;  // the dropzone's own
    ev.preventDefault();
    ev.stopPropagation();
    dropHint(false);
    handOver([...ev.dataTransfer.files]);
  }, true);
  document.addEventListener("paste", (ev) => {
    const files = ev.clipboardData ? [...ev.clipboardData.files] : [];
    if (!files.length || !inChat(ev)) return;
    ev.preventDefault();  // a file, not text: the words typed stay as they are
    handOver(files);
  }, true);

  // -- keys -------------------------------------------------------------------------------
  document.addEventListener("keydown", (ev) => {
    const el = ev.target;
    if (el && el.id === "composer" && ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) {
      ev.preventDefault();
      ev.stopPropagation();
      trySend();
      return;
    }
    if (ev.key === "Escape" && streaming() && !document.querySelector("[role=dialog]")) {
      byTest("stop-button").click();
      return;
    }
    if ((ev.ctrlKey || ev.metaKey) && ev.shiftKey && (ev.key === "O" || ev.key === "o")) {
      const link = [...document.querySelectorAll('[data-testid="new-conversation"]')]
        .find((a) => a.offsetParent !== null) || byTest("new-conversation");
      if (link) { ev.preventDefault(); link.click(); }
    }
  }, true);

  document.addEventListener("input", (ev) => {
    if (ev.target && ev.target.id === "composer") save(ev.target);
  }, true);

  document.addEventListener("click", (ev) => {
    const t = ev.target.closest && ev.target.closest("[data-testid]");
    if (!t) return;
    const id = t.dataset.testid;
    if (id === "retry-send") L.retry();
    else if (id === "dismiss-unsent") L.dismiss();
    else if (id === "jump-latest") {
      const list = $("message-list");
      if (list) list.scrollTo({ top: 0, behavior: "smooth" });
    } else if (id === "copy-message") {
      t.dataset.copied = "1";
      const note = byTest("copied-note");
      if (note) { visible(note, true); clearTimeout(L.copiedTimer); L.copiedTimer = setTimeout(() => visible(note, false), 1500); }
    }
  }, true);

  // -- scrolling ----------------------------------------------------------------------------
  function jumpButton() {
    const list = $("message-list"), jump = byTest("jump-latest");
    if (!list || !jump) return;
    visible(jump, list.scrollTop < -240);  // column-reverse: negative is scrolled up
  }
  document.addEventListener("scroll", (ev) => {
    if (ev.target && ev.target.id === "message-list") jumpButton();
  }, true);

  // -- connection -----------------------------------------------------------------------------
  let wasOffline = false;
  function connection() {
    const now = offline();
    if (wasOffline && !now) {
      const back = byTest("connection-back");
      visible(back, true);
      setTimeout(() => visible(back, false), 3000);
      const refresh = $("lumina-reconnected");
      if (refresh) refresh.click();  // the open conversation, read again
    }
    wasOffline = now;
  }

  function tick() { check(); connection(); }
  new MutationObserver(tick).observe(document.documentElement, { childList: true, subtree: true });
  setInterval(tick, 250);
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", tick);
  tick();
})();
