// Key–value rows (portal/keyvalue_widget.py): add a row, remove a row. Without this script the rows still
// post; with it, the form's other scripts hear a "pp:changed" event after each add or remove.
(() => {
  const changed = (element) => element.dispatchEvent(new CustomEvent("pp:changed", { bubbles: true }));

  const blankRow = (row) => {
    const copy = row.cloneNode(true);
    copy.classList.remove("kv-invalid");
    copy.removeAttribute("aria-invalid");
    copy.querySelectorAll("input").forEach((input) => { input.value = ""; });
    copy.querySelectorAll("select").forEach((select) => { select.selectedIndex = 0; });
    return copy;
  };

  document.addEventListener("click", (event) => {
    const add = event.target.closest("[data-kv-add]");
    if (add) {
      const body = add.closest("[data-kv-rows]").querySelector("tbody");
      const rows = body.querySelectorAll("[data-kv-row]");
      const row = blankRow(rows[rows.length - 1]);  // names follow the inline's prefix as Django renumbered it
      body.appendChild(row);
      row.querySelector("input, select").focus();
      changed(body);
      return;
    }
    const remove = event.target.closest("[data-kv-remove]");
    if (remove) {
      const row = remove.closest("[data-kv-row]");
      const body = row.parentElement;
      if (body.querySelectorAll("[data-kv-row]").length > 1) row.remove();
      else body.replaceChild(blankRow(row), row);  // the last row is kept, emptied: one is needed to add
      changed(body);
    }
  });
})();
