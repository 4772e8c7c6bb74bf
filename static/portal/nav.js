// The top bar's menu button (shown on narrow screens only): opens and closes the links and the account.
document.addEventListener("DOMContentLoaded", () => {
  const toggle = document.getElementById("nav-toggle");
  if (!toggle) return;  // signed out: no menu
  toggle.addEventListener("click", () => {
    const open = toggle.getAttribute("aria-expanded") !== "true";
    toggle.setAttribute("aria-expanded", String(open));
    document.getElementById("topbar").classList.toggle("nav-open", open);
  });
});
