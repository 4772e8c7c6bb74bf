// The pool and platform pages (pools/admin): the default platform's choices follow the platform rows as they
// are typed, and the node match (a [data-node-match] panel) is asked again, debounced, whenever the form
// changes: the whole form is posted to the panel's URL and its HTML answer put in place.
(() => {
  const DEBOUNCE_MS = 350;

  const platformNames = (form) =>
    [...form.querySelectorAll('input[name^="platforms-"][name$="-name"]')]
      .filter((input) => !input.name.includes("__prefix__"))
      .filter((input) => {
        const removed = form.querySelector(`input[name="${input.name.replace(/-name$/, "-DELETE")}"]`);
        return !(removed && removed.checked) && input.value.trim();
      })
      .map((input) => input.value.trim());

  const followPlatforms = (form) => {
    const select = form.querySelector("select[data-default-platform]");
    if (!select || !form.querySelector('input[name="platforms-TOTAL_FORMS"]')) return;
    const chosen = select.value;
    const names = [...new Set(platformNames(form))].sort();
    if (chosen && !names.includes(chosen)) names.push(chosen);  // kept: the save says why it is refused
    const none = select.options[0];
    select.replaceChildren(none, ...names.map((name) => new Option(name, name, false, name === chosen)));
  };

  const watchMatch = (form, panel) => {
    let timer = null;
    let asked = 0;
    const ask = async () => {
      const mine = ++asked;
      panel.setAttribute("aria-busy", "true");
      try {
        const response = await fetch(panel.dataset.nodeMatch, {
          method: "POST",
          body: new FormData(form),
          credentials: "same-origin",
          headers: { "X-Requested-With": "fetch" },
        });
        const html = await response.text();
        if (mine === asked) panel.innerHTML = response.ok ? html : "<p>The node match is not available.</p>";
      } finally {
        if (mine === asked) panel.removeAttribute("aria-busy");
      }
    };
    const later = (event) => {
      if (panel.contains(event.target)) return;
      clearTimeout(timer);
      timer = setTimeout(ask, DEBOUNCE_MS);
    };
    ["input", "change", "pp:changed"].forEach((name) => form.addEventListener(name, later));
    ask();  // the panel shows what is saved; a refused save shows the form as posted, so ask for that
  };

  document.addEventListener("DOMContentLoaded", () => {
    const panel = document.querySelector("[data-node-match]");
    const form = (panel && panel.closest("form")) || document.querySelector("select[data-default-platform]")?.closest("form");
    if (!form) return;
    const follow = () => followPlatforms(form);
    form.addEventListener("input", follow);
    form.addEventListener("change", follow);
    document.addEventListener("formset:added", follow);
    document.addEventListener("formset:removed", follow);
    if (panel) watchMatch(form, panel);
  });
})();
