// The inline editor of a question (#45): Enter saves and sends, Shift+Enter is a new
// line, Esc cancels. The composer's keys and draft are not touched.
(() => {
  document.addEventListener("keydown", (ev) => {
    const el = ev.target;
    if (!el || el.id !== "lumina-edit-text" || ev.isComposing) return;
    if (ev.key === "Enter" && !ev.shiftKey) {
      ev.preventDefault();
      ev.stopPropagation();
      if (el.form) el.form.requestSubmit();
    } else if (ev.key === "Escape") {
      ev.preventDefault();
      ev.stopPropagation();
      const cancel = document.querySelector('[data-testid="edit-cancel"]');
      if (cancel) cancel.click();
    }
  }, true);
})();
