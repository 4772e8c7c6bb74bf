// A part of a page that scrolls on its own (a wide table on a phone, the resolved pod, a spec) must be reachable
// with the keyboard, or its hidden part cannot be read without a mouse (WCAG 2.1.1; axe
// scrollable-region-focusable). Each element that scrolls right now and holds nothing focusable becomes a tab
// stop named after the heading before it (role=region, aria-label); one that stops scrolling (a wider window)
// stops being one. Runs on load, when htmx swaps content in and when the window changes size. Portal pages load
// it from templates/portal/base.html, admin pages from UNFOLD["SCRIPTS"] (portal/settings.py).
(() => {
  const HEADINGS = "h1, h2, h3, h4, legend, summary";
  const FOCUSABLE = "a[href], button, input, select, textarea, [tabindex], [contenteditable]";
  const MARK = "data-scroll-region"; // the attributes this script added, to take back

  function scrolls(element) {
    const style = getComputedStyle(element);
    const x = /auto|scroll/.test(style.overflowX) && element.scrollWidth > element.clientWidth + 1;
    const y = /auto|scroll/.test(style.overflowY) && element.scrollHeight > element.clientHeight + 1;
    return x || y;
  }

  function nameOf(element) {
    for (let node = element; node && node !== document.body; node = node.parentElement) {
      for (let before = node.previousElementSibling; before; before = before.previousElementSibling) {
        const headings = before.matches(HEADINGS) ? [before] : before.querySelectorAll(HEADINGS);
        const text = headings.length ? headings[headings.length - 1].textContent.replace(/\s+/g, " ").trim() : "";
        if (text) return text;
      }
    }
    return "Scrolling content";
  }

  function update() {
    for (const element of document.querySelectorAll(`[${MARK}]`)) {
      if (scrolls(element)) continue;
      for (const name of element.getAttribute(MARK).split(" ")) element.removeAttribute(name);
      element.removeAttribute(MARK);
    }
    for (const element of document.body.querySelectorAll("div, pre, section, table, ul, ol")) {
      if (element.hasAttribute("tabindex") || element.querySelector(FOCUSABLE) || !scrolls(element)) continue;
      const added = ["tabindex"];
      element.setAttribute("tabindex", "0");
      if (!element.hasAttribute("role")) {
        element.setAttribute("role", "region");
        added.push("role");
      }
      if (!element.hasAttribute("aria-label") && !element.hasAttribute("aria-labelledby")) {
        element.setAttribute("aria-label", nameOf(element));
        added.push("aria-label");
      }
      element.setAttribute(MARK, added.join(" ")); // what to take back if it stops scrolling
    }
  }

  let pending = false;
  function soon() {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => { pending = false; update(); });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", update);
  else update();
  window.addEventListener("resize", soon);
  document.addEventListener("htmx:afterSwap", update); // at once: the swapped-in content is checked as it shows
  document.addEventListener("htmx:afterSettle", soon);
})();
