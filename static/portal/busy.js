// Long actions show progress, so nobody clicks twice or wonders whether it started:
// - a form with data-busy="Syncing…" (the admin's confirmation pages, portal.admin_base.confirmation_page);
// - an admin list's action form running one of BUSY_ACTIONS (the backends' sync and test, clusters/admin.py).
// On submit, its submit button is disabled, says the label and is marked aria-busy until the server answers.
const BUSY_ACTIONS = { sync_inventory: "Syncing…", test_connection: "Testing…" };

function busyLabel(form) {
  if (form.dataset && form.dataset.busy) return form.dataset.busy;
  const action = form.querySelector("select[name=action]");
  return action ? BUSY_ACTIONS[action.value] : undefined;
}

document.addEventListener("submit", (event) => {
  const form = event.target;
  const label = busyLabel(form);
  if (!label) return;
  const button = event.submitter || form.querySelector("button[type=submit]");
  if (!button) return;
  if (button.getAttribute("aria-busy") === "true") { event.preventDefault(); return; }
  // disabled once the submission is under way: a disabled button cannot submit its form
  setTimeout(() => { button.disabled = true; }, 0);
  button.setAttribute("aria-busy", "true");
  button.textContent = label;
  form.classList.add("is-busy");
});
