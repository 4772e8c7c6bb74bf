// Self-refreshing admin pages (docs/admin.md, "Dashboards"): every data-refresh-seconds (at least 10), fetch this
// page again and swap in the fresh copy of each element named in data-refresh-parts (ids, space separated). Not a
// <meta http-equiv="refresh">: a full reload would lose the scroll position and whatever is typed in the sidebar's
// search. A part holding the keyboard focus is left alone until the next round; nothing happens while the tab is
// hidden (it refreshes when shown again) or when the answer is not the page (an error, or signed out).
//   <script src="{% static 'portal/refresh.js' %}" data-refresh-seconds="30" data-refresh-parts="dashboard" defer>
(function () {
  "use strict";
  const script = document.currentScript;
  if (!script) return;
  const seconds = Math.max(10, parseInt(script.dataset.refreshSeconds, 10) || 60);
  const parts = (script.dataset.refreshParts || "").split(/\s+/).filter(Boolean);
  let busy = false;

  async function refresh() {
    if (document.hidden || busy || !parts.length) return;
    busy = true;
    try {
      const answer = await fetch(window.location.href, { credentials: "same-origin", headers: { "X-Refresh": "1" } });
      if (!answer.ok || answer.redirected) return;
      const fresh = new DOMParser().parseFromString(await answer.text(), "text/html");
      for (const id of parts) {
        const shown = document.getElementById(id);
        const next = fresh.getElementById(id);
        if (!shown || !next || shown.contains(document.activeElement)) continue;
        shown.replaceWith(document.importNode(next, true));
      }
      document.documentElement.dataset.refreshedAt = new Date().toISOString();
    } catch (error) {
      // offline or the server restarting: the next round tries again
    } finally {
      busy = false;
    }
  }

  setInterval(refresh, seconds * 1000);
  document.addEventListener("visibilitychange", () => {
    if (!document.hidden) refresh();
  });
})();
