// The portal's code editor: every <textarea data-code-editor="yaml|json"> becomes a CodeMirror 6 editor.
//
// Progressive enhancement: the textarea stays in the form (hidden) and receives every edit, so posting,
// htmx requests and pages without this script work the same. Errors are shown at their line, inline:
// - typed syntax errors, checked as you type (YAML by the `yaml` package, JSON by JSON.parse);
// - the server's errors: the textarea's `data-errors` ([{line, message}], from portal.widgets) and any
//   element `[data-error-for=<textarea id>][data-line]` on the page (the self-service error box).
// Server errors are stale once the text changes: they are dropped, with elements marked
// `[data-clear-on-edit=<textarea id>]`. Exposed as window.PortalEditor for pages and tests.

import { defaultKeymap, history, historyKeymap, indentWithTab } from "@codemirror/commands";
import { json, jsonParseLinter } from "@codemirror/lang-json";
import { yaml } from "@codemirror/lang-yaml";
import {
  bracketMatching,
  defaultHighlightStyle,
  foldGutter,
  HighlightStyle,
  foldKeymap,
  indentOnInput,
  syntaxHighlighting,
} from "@codemirror/language";
import { forEachDiagnostic, linter, lintGutter, lintKeymap, setDiagnostics } from "@codemirror/lint";
import { highlightSelectionMatches, searchKeymap } from "@codemirror/search";
import { Compartment, EditorState, Prec, StateField } from "@codemirror/state";
import {
  Decoration,
  EditorView,
  WidgetType,
  drawSelection,
  highlightActiveLine,
  highlightActiveLineGutter,
  keymap,
  lineNumbers,
} from "@codemirror/view";
import { tags } from "@lezer/highlight";
import { parseDocument } from "yaml";

const editors = new Map(); // textarea -> {view, server: [{line, message}], stale}

// ---------------------------------------------------------------------------------- syntax checks

function yamlSyntax(view) {
  const text = view.state.doc.toString();
  if (!text.trim()) return [];
  const document = parseDocument(text, { prettyErrors: false, uniqueKeys: true });
  return document.errors.map((error) => {
    const from = Math.min(error.pos[0], text.length);
    const to = Math.min(Math.max(error.pos[1], from), text.length);
    return { from, to, severity: "error", source: "YAML", message: firstLine(error.message) };
  });
}

const jsonSyntax = jsonParseLinter();

function firstLine(message) {
  return String(message).split("\n")[0].replace(/ at line \d+, column \d+:?$/, "");
}

// ---------------------------------------------------------------------------------- server errors

function lineDiagnostic(doc, line, message) {
  const number = Math.min(Math.max(1, line || 1), doc.lines);
  const at = doc.line(number);
  const indent = at.text.length - at.text.trimStart().length;
  return { from: at.from + indent, to: at.to, severity: "error", source: "server", message };
}

function serverErrors(textarea) {
  const found = [];
  try {
    for (const error of JSON.parse(textarea.dataset.errors || "[]")) found.push(error);
  } catch (_) {
    // a malformed attribute shows no marker; the page still lists the error
  }
  if (textarea.id) {
    for (const element of document.querySelectorAll(`[data-error-for="${CSS.escape(textarea.id)}"][data-line]`)) {
      found.push({ line: Number(element.dataset.line), message: element.dataset.message || element.textContent.trim() });
    }
  }
  return found.filter((error) => error.line > 0);
}

function serverDiagnostics(entry, doc) {
  return entry.stale ? [] : entry.server.map((error) => lineDiagnostic(doc, error.line, error.message));
}

// ---------------------------------------------------------------------------------- inline messages

class MessageWidget extends WidgetType {
  constructor(message, severity) {
    super();
    this.message = message;
    this.severity = severity;
  }
  eq(other) {
    return other.message === this.message && other.severity === this.severity;
  }
  toDOM() {
    const element = document.createElement("div");
    element.className = `cm-inline-message cm-inline-${this.severity}`;
    element.setAttribute("role", "alert");
    element.textContent = this.message;
    return element;
  }
}

function inlineMessages(state) {
  const ranges = [];
  forEachDiagnostic(state, (diagnostic, from, to) => {
    const line = state.doc.lineAt(Math.max(from, Math.min(to, state.doc.length)));
    const widget = new MessageWidget(diagnostic.message, diagnostic.severity);
    ranges.push(Decoration.widget({ widget, block: true, side: 1 }).range(line.to));
  });
  return Decoration.set(ranges, true);
}

const inlineField = StateField.define({
  create: inlineMessages,
  update: (value, transaction) => inlineMessages(transaction.state),
  provide: (field) => EditorView.decorations.from(field),
});

// ---------------------------------------------------------------------------------- the editor

const theme = EditorView.theme({
  // contain: a long line scrolls inside the editor instead of widening the form (or the phone's page)
  "&": { contain: "inline-size", width: "100%", minHeight: "12rem", maxHeight: "var(--editor-height, min(70vh, 34rem))", border: "1px solid #d1d5db", borderRadius: "6px", background: "#fcfcfd", fontSize: ".85rem" },
  "&.cm-focused": { outline: "2px solid #ddd6fe", borderColor: "#7c3aed" },
  ".cm-scroller": { overflow: "auto", fontFamily: "ui-monospace, SFMono-Regular, Menlo, Consolas, monospace", lineHeight: "1.45" },
  ".cm-gutters": { background: "#f4f4f5", borderRight: "1px solid #e4e4e7", color: "#52525b" }, // 4.5:1 and more
  // A message stays in the visible part of the editor (sticky, as wide as the view: --cm-visible, measured)
  // and wraps there; before the measure, width 0 + min-width 100% keep it from widening the content.
  ".cm-inline-message": {
    position: "sticky",
    left: "var(--cm-gutter, 0)",
    fontFamily: "system-ui, sans-serif",
    fontSize: ".8rem",
    padding: ".15rem .6rem",
    margin: ".1rem 0",
    borderLeft: "3px solid",
    whiteSpace: "pre-wrap",
    overflowWrap: "anywhere",
    boxSizing: "border-box",
    width: "var(--cm-visible, 0)",
    minWidth: "var(--cm-visible, 100%)",
  },
  ".cm-inline-error": { color: "#991b1b", background: "#fef2f2", borderColor: "#dc2626" },
  ".cm-inline-warning": { color: "#92400e", background: "#fffbeb", borderColor: "#d97706" },
});

// Dark pages (the admin's dark mode: <html class="dark">) get a dark editor, switched as the page switches.
const darkHighlight = HighlightStyle.define([
  { tag: tags.keyword, color: "#c792ea" },
  { tag: [tags.atom, tags.bool, tags.url, tags.contentSeparator, tags.labelName], color: "#82aaff" },
  { tag: [tags.literal, tags.inserted, tags.number], color: "#f5a97f" },
  { tag: [tags.string, tags.deleted], color: "#c3e88d" },
  { tag: tags.definition(tags.propertyName), color: "#7dd3fc" },
  { tag: tags.propertyName, color: "#7dd3fc" },
  { tag: tags.comment, color: "#9ca3af", fontStyle: "italic" },
  { tag: tags.meta, color: "#a1a1aa" },
  { tag: tags.invalid, color: "#fca5a5" },
]);

const darkTheme = EditorView.theme(
  {
    "&": { background: "#18181b", color: "#e4e4e7", borderColor: "#3f3f46" },
    ".cm-gutters": { background: "#27272a", color: "#a1a1aa", borderRight: "1px solid #3f3f46" },
    ".cm-activeLine": { background: "#ffffff0d" },
    ".cm-activeLineGutter": { background: "#ffffff14" },
    ".cm-cursor, .cm-dropCursor": { borderLeftColor: "#e4e4e7" },
    "&.cm-focused > .cm-scroller > .cm-selectionLayer .cm-selectionBackground, .cm-selectionBackground": {
      background: "#3730a3",
    },
    ".cm-inline-error": { color: "#fecaca", background: "#450a0a", borderColor: "#f87171" },
    ".cm-inline-warning": { color: "#fde68a", background: "#451a03", borderColor: "#f59e0b" },
  },
  { dark: true },
);

const appearance = new Compartment();

function pageIsDark() {
  return document.documentElement.classList.contains("dark");
}

function looks() {
  return pageIsDark() ? [darkTheme, syntaxHighlighting(darkHighlight)] : [];
}

function followPageTheme() {
  let dark = pageIsDark();
  new MutationObserver(() => {
    if (pageIsDark() === dark) return;
    dark = pageIsDark();
    for (const { view } of editors.values()) view.dispatch({ effects: appearance.reconfigure(looks()) });
  }).observe(document.documentElement, { attributes: true, attributeFilter: ["class"] });
}

function labelOf(textarea) {
  const label = textarea.id && document.querySelector(`label[for="${CSS.escape(textarea.id)}"]`);
  return (label && label.textContent.trim()) || textarea.getAttribute("aria-label") || "Code editor";
}

function upgrade(textarea) {
  if (editors.has(textarea)) return editors.get(textarea).view;
  const language = textarea.dataset.codeEditor === "json" ? "json" : "yaml";
  const entry = { view: null, server: serverErrors(textarea), stale: false };
  const syntax = language === "json" ? jsonSyntax : yamlSyntax;
  const check = linter((view) => [...serverDiagnostics(entry, view.state.doc), ...syntax(view)], { delay: 300 });
  const state = EditorState.create({
    doc: textarea.value,
    extensions: [
      lineNumbers(),
      highlightActiveLineGutter(),
      foldGutter(),
      lintGutter(),
      history(),
      drawSelection(),
      indentOnInput(),
      bracketMatching(),
      highlightActiveLine(),
      highlightSelectionMatches(),
      syntaxHighlighting(defaultHighlightStyle, { fallback: true }),
      EditorState.tabSize.of(2),
      language === "json" ? json() : yaml(),
      check,
      inlineField,
      theme,
      Prec.highest(appearance.of(looks())),
      keymap.of([...defaultKeymap, ...historyKeymap, ...foldKeymap, ...searchKeymap, ...lintKeymap, indentWithTab]),
      // tabindex: the text is editable and Tab reaches it anyway, but axe (scrollable-region-focusable) counts
      // only elements with a tab index as what a keyboard can reach inside the scrolling part; one tab stop still
      EditorView.contentAttributes.of({ "aria-label": labelOf(textarea), "aria-multiline": "true", tabindex: "0" }),
      EditorView.updateListener.of((update) => {
        if (update.docChanged) edited(textarea, update.view);
        if (update.geometryChanged) measureVisible(update.view);
      }),
    ],
  });
  const view = new EditorView({ state });
  entry.view = view;
  editors.set(textarea, entry);
  view.dom.classList.add("portal-code-editor");
  view.dom.dataset.language = language;
  if (textarea.id) view.dom.id = `${textarea.id}-code`;
  textarea.insertAdjacentElement("afterend", view.dom);
  textarea.hidden = true;
  textarea.required = false; // a hidden required field would block the form silently; the server checks it
  textarea.dataset.upgraded = "true";
  focusFromLabel(textarea, view);
  measureVisible(view);
  new ResizeObserver(() => measureVisible(view)).observe(view.scrollDOM); // a wider window: wider messages
  showServerErrors(entry);
  return view;
}

/** How wide the text area of the editor is on screen, for the inline messages. */
function measureVisible(view) {
  view.requestMeasure({
    read: () => {
      const gutters = view.dom.querySelector(".cm-gutters");
      const gutter = gutters ? gutters.offsetWidth : 0;
      return { gutter, visible: Math.max(0, view.scrollDOM.clientWidth - gutter) };
    },
    write: ({ gutter, visible }) => {
      if (view.dom.style.getPropertyValue("--cm-visible") === `${visible}px`) return;
      view.dom.style.setProperty("--cm-gutter", `${gutter}px`);
      view.dom.style.setProperty("--cm-visible", `${visible}px`);
      view.requestMeasure(); // the messages may wrap differently now: line heights again
    },
  });
}

function focusFromLabel(textarea, view) {
  if (!textarea.id) return;
  const label = document.querySelector(`label[for="${CSS.escape(textarea.id)}"]`);
  if (label) label.addEventListener("click", (event) => { event.preventDefault(); view.focus(); });
}

function showServerErrors(entry) {
  const { view } = entry;
  view.dispatch(setDiagnostics(view.state, serverDiagnostics(entry, view.state.doc)));
}

function edited(textarea, view) {
  textarea.value = view.state.doc.toString();
  textarea.dispatchEvent(new Event("input", { bubbles: true }));
  const entry = editors.get(textarea);
  if (!entry || entry.stale) return;
  entry.stale = true; // the server judged another text
  if (textarea.id) {
    for (const element of document.querySelectorAll(`[data-clear-on-edit="${CSS.escape(textarea.id)}"]`)) element.remove();
  }
  textarea.removeAttribute("data-errors");
  queueMicrotask(() => dropServerDiagnostics(view)); // not inside this update; the linter runs later
}

function dropServerDiagnostics(view) {
  const kept = [];
  forEachDiagnostic(view.state, (diagnostic, from, to) => {
    if (diagnostic.source !== "server") kept.push({ ...diagnostic, from, to });
  });
  view.dispatch(setDiagnostics(view.state, kept));
}

function upgradeAll(root = document) {
  const found = root.matches && root.matches("textarea[data-code-editor]") ? [root] : [];
  found.push(...root.querySelectorAll("textarea[data-code-editor]"));
  found.forEach(upgrade);
}

/** Read the page's error elements again (after an htmx swap brought or removed some). */
function refreshServerErrors() {
  for (const [textarea, entry] of editors) {
    if (!textarea.isConnected) {
      entry.view.destroy();
      editors.delete(textarea);
      continue;
    }
    entry.server = serverErrors(textarea);
    entry.stale = false;
    showServerErrors(entry);
  }
}

/** Replace the whole text (an example, a test); the textarea follows. */
function setText(textarea, text) {
  const view = upgrade(textarea);
  view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text } });
}

/** Put the cursor on a line and show it (an error's "line 7" link). */
function goToLine(textarea, line) {
  const view = upgrade(textarea);
  const at = view.state.doc.line(Math.min(Math.max(1, line), view.state.doc.lines));
  view.dispatch({ selection: { anchor: at.from }, scrollIntoView: true });
  view.focus();
}

window.PortalEditor = {
  upgrade,
  upgradeAll,
  setText,
  goToLine,
  refreshServerErrors,
  viewOf: (textarea) => editors.get(textarea)?.view,
};

followPageTheme();
if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", () => upgradeAll());
else upgradeAll();
document.addEventListener("htmx:load", (event) => upgradeAll(event.target));
document.addEventListener("htmx:afterSettle", refreshServerErrors);
