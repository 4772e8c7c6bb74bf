// The submit page (templates/selfservice/submit.html): an example chip asks before it replaces edits and is
// marked once chosen; Preview and Submit show that they are working; errors of another text are cleared.
// Without this script the chips are links and the buttons plain form buttons: everything still works.
(function () {
  "use strict";
  let loadedText = null; // the spec as the server sent it: an example, or the user's posted text

  function spec() {
    return document.getElementById("spec-editor");
  }

  function remember() {
    const textarea = spec();
    loadedText = textarea ? textarea.value : null;
  }

  function hasEdits() {
    const textarea = spec();
    const wrap = document.getElementById("editor-wrap");
    if (!textarea || !wrap || !textarea.value.trim()) return false;
    return !wrap.dataset.example || textarea.value !== loadedText; // a posted spec is all the user's own
  }

  function chipOf(element) {
    return element && element.closest ? element.closest(".examples .chip") : null;
  }

  function markChosen(chosen) {
    for (const chip of document.querySelectorAll(".examples .chip")) {
      const on = chip === chosen;
      chip.classList.toggle("chosen", on);
      chip.setAttribute("aria-pressed", on ? "true" : "false");
    }
  }

  function clearErrors() {
    for (const box of document.querySelectorAll('[data-clear-on-edit="spec-editor"]')) box.remove();
  }

  function busy(button, on) {
    if (!button || !button.dataset.busyLabel) return;
    if (on) {
      button.dataset.idleLabel = button.textContent;
      button.textContent = button.dataset.busyLabel;
      button.setAttribute("aria-busy", "true");
    } else if (button.dataset.idleLabel) {
      button.textContent = button.dataset.idleLabel;
      button.removeAttribute("aria-busy");
    }
  }

  document.addEventListener("htmx:confirm", (event) => {
    const chip = chipOf(event.detail.elt);
    if (!chip || !hasEdits()) return;
    event.preventDefault();
    const question = `Replace your edits with the example “${chip.textContent.trim()}”? Your changes would be lost.`;
    if (window.confirm(question)) event.detail.issueRequest(true);
  });

  document.addEventListener("htmx:beforeRequest", (event) => {
    const button = event.detail.elt;
    if (button && button.id === "preview-button") {
      clearErrors(); // a new preview: the last answer's errors no longer apply
      busy(button, true);
    }
  });

  document.addEventListener("htmx:afterRequest", (event) => {
    const source = event.detail.elt;
    if (source && source.id === "preview-button") busy(source, false);
    const chip = chipOf(source);
    if (chip && event.detail.successful) {
      markChosen(chip);
      remember();
      clearErrors(); // they were about the text the example replaced
    }
  });

  document.addEventListener("submit", (event) => {
    const button = event.submitter;
    if (!button || button.id !== "submit-workflow") return;
    busy(button, true);
    // Disabled after the browser has read the form (a disabled button would not submit it).
    setTimeout(() => {
      button.disabled = true;
      const preview = document.getElementById("preview-button");
      if (preview) preview.disabled = true;
    });
  });

  window.addEventListener("pageshow", (event) => {
    if (!event.persisted) return; // back to a page kept in memory: its buttons work again
    for (const button of document.querySelectorAll("[data-busy-label]")) {
      button.disabled = false;
      busy(button, false);
    }
  });

  document.addEventListener("click", (event) => {
    const link = event.target.closest && event.target.closest("a.error-line[data-line]");
    const textarea = spec();
    if (!link || !textarea || !window.PortalEditor) return;
    event.preventDefault();
    window.PortalEditor.goToLine(textarea, Number(link.dataset.line));
  });

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", remember);
  else remember();
})();
