// The workflow page, live: times in the reader's locale, clocks that tick, and the container log that follows.
// The status part (#workflow-status) is refreshed by htmx; this script only formats it, so it runs again after
// every swap. The log pane is outside that part and keeps its lines: it asks only for lines after its cursor.
(function () {
  "use strict";
  const LONG = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "medium" });
  const SHORT = new Intl.DateTimeFormat(undefined, { timeStyle: "medium" });
  const MAX_LINES = 5000; // the pane drops its oldest lines beyond this
  const FOLLOW_MS = 2000;
  let skew = 0; // server clock minus ours, so a clock ticks from the server's times

  // 4s, 1m 03s, 2h 05m, 3d 4h (as selfservice.timeline.duration)
  function duration(seconds) {
    seconds = Math.max(0, Math.floor(seconds));
    const d = Math.floor(seconds / 86400), h = Math.floor((seconds % 86400) / 3600);
    const m = Math.floor((seconds % 3600) / 60), s = seconds % 60;
    const two = (n) => String(n).padStart(2, "0");
    if (d) return `${d}d ${h}h`;
    if (h) return `${h}h ${two(m)}m`;
    if (m) return `${m}m ${two(s)}s`;
    return `${s}s`;
  }

  function localize(root) {
    root.querySelectorAll("time[datetime][data-local]").forEach((el) => {
      const at = new Date(el.dateTime);
      if (Number.isNaN(at.getTime())) return;
      el.title = el.dateTime;
      el.textContent = ("short" in el.dataset ? SHORT : LONG).format(at);
    });
    const status = document.getElementById("workflow-status");
    if (status && status.dataset.now) skew = Date.parse(status.dataset.now) - Date.now();
    tick();
  }

  function tick() {
    const now = Date.now() + skew;
    document.querySelectorAll("[data-elapsed-from]").forEach((el) => {
      el.textContent = duration((now - Date.parse(el.dataset.elapsedFrom)) / 1000);
    });
  }

  // --- the container log ----------------------------------------------------------------------------------
  const log = { url: "", cursor: "", timer: null, busy: false, finished: false };

  function pane() { return document.getElementById("log-lines"); }

  function say(notice, state) {
    const box = document.getElementById("log-notice");
    box.hidden = !notice;
    box.textContent = notice || "";
    box.dataset.state = state || "";
    document.getElementById("log-state").textContent =
      log.finished ? "the task has ended" : (following() ? "following" : "");
  }

  function following() {
    const box = document.getElementById("log-follow");
    return box && box.checked && !log.finished;
  }

  function append(lines) {
    const el = pane();
    const atBottom = el.scrollHeight - el.scrollTop - el.clientHeight < 24;
    const chunk = document.createDocumentFragment();
    for (const line of lines) {
      const row = document.createElement("span");
      row.className = "log-line";
      row.dataset.at = line.at;
      if (line.at) {
        const time = document.createElement("span");
        time.className = "log-time";
        time.textContent = SHORT.format(new Date(line.at.replace(/(\.\d{3})\d*Z$/, "$1Z")));
        row.append(time, " ");
      }
      row.append(line.text);
      chunk.append(row);
    }
    el.append(chunk);
    while (el.childElementCount > MAX_LINES) el.firstElementChild.remove();
    if (atBottom || lines.length === el.childElementCount) el.scrollTop = el.scrollHeight;
  }

  async function fetchLog() {
    if (!log.url || log.busy) return;
    log.busy = true;
    const query = new URLSearchParams({ tail: pane().dataset.tail || "200" });
    if (log.cursor) query.set("since", log.cursor);
    try {
      const response = await fetch(`${log.url}?${query}`, { headers: { Accept: "application/json" } });
      const body = await response.json();
      if (!response.ok) {
        log.finished = true;
        say(body.reason || `The log cannot be shown (HTTP ${response.status}).`, "refused");
        return;
      }
      append(body.lines);
      log.cursor = body.cursor || log.cursor;
      log.finished = body.finished && body.state !== "not_started";
      say(body.notice, body.state);
    } catch (error) {
      say("The portal did not answer; trying again.", "unreachable");
    } finally {
      log.busy = false;
      schedule();
    }
  }

  function schedule() {
    clearTimeout(log.timer);
    if (following()) log.timer = setTimeout(fetchLog, FOLLOW_MS);
  }

  function open(url) {
    clearTimeout(log.timer);
    Object.assign(log, { url, cursor: "", finished: false });
    pane().replaceChildren();
    say("", "");
    fetchLog();
  }

  document.addEventListener("DOMContentLoaded", () => {
    localize(document);
    setInterval(tick, 1000);
    document.body.addEventListener("htmx:afterSettle", (event) => localize(event.target));
    const el = pane();
    if (!el) return;
    const chooser = document.getElementById("log-task");
    if (chooser) chooser.addEventListener("change", () => open(chooser.value));
    document.getElementById("log-follow").addEventListener("change", () => (following() ? fetchLog() : schedule()));
    open(el.dataset.url);
  });
})();
