// Long actions show progress: a form with data-busy="Syncing…" disables its submit button on submit and says
// so on it (the page stays until the server answers), so nobody clicks twice or wonders whether it started.
document.addEventListener("submit", (event) => {
  const form = event.target;
  const label = form.dataset && form.dataset.busy;
  if (!label) return;
  const button = form.querySelector("button[type=submit]");
  if (!button) return;
  if (button.disabled) { event.preventDefault(); return; }
  // disabled after the submission is under way: a disabled button cannot submit its form
  setTimeout(() => { button.disabled = true; }, 0);
  button.setAttribute("aria-busy", "true");
  button.textContent = label;
  form.classList.add("is-busy");
});
