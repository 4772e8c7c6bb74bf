// Ordered pickers (portal/ordered_widget.py): add a name from the select, move it up or down, remove it.
// Each chosen name is a hidden input in list order, so the order posted is the order shown.
(() => {
  const changed = (element) => element.dispatchEvent(new CustomEvent("pp:changed", { bubbles: true }));

  const refresh = (picker) => {
    const list = picker.querySelector("[data-op-list]");
    const chosen = new Set([...list.querySelectorAll("input[type=hidden]")].map((input) => input.value));
    picker.querySelector("[data-op-empty]").hidden = chosen.size > 0;
    picker.querySelectorAll("[data-op-add] option").forEach((option) => {
      option.disabled = option.value !== "" && chosen.has(option.value);
    });
    changed(picker);
  };

  const button = (label, data, text) => {
    const element = document.createElement("button");
    element.type = "button";
    element.className = "pp-button";
    element.setAttribute(data, "");
    element.setAttribute("aria-label", label);
    element.textContent = text;
    return element;
  };

  const item = (name, value) => {
    const li = document.createElement("li");
    li.className = "op-item";
    li.setAttribute("data-op-item", "");
    const input = document.createElement("input");
    input.type = "hidden";
    input.name = name;
    input.value = value;
    const label = document.createElement("span");
    label.className = "op-name";
    label.textContent = value;
    const buttons = document.createElement("span");
    buttons.className = "op-buttons";
    buttons.append(
      button(`Move ${value} up`, "data-op-up", "↑"),
      button(`Move ${value} down`, "data-op-down", "↓"),
      button(`Remove ${value}`, "data-op-remove", "Remove"),
    );
    li.append(input, label, buttons);
    return li;
  };

  document.addEventListener("change", (event) => {
    const select = event.target.closest("[data-op-add]");
    if (!select || !select.value) return;
    const picker = select.closest("[data-ordered-picker]");
    picker.querySelector("[data-op-list]").appendChild(item(select.name, select.value));
    select.value = "";  // the select posts blank: the list holds the choice
    refresh(picker);
  });

  document.addEventListener("click", (event) => {
    const target = event.target.closest("[data-op-up], [data-op-down], [data-op-remove]");
    if (!target) return;
    const li = target.closest("[data-op-item]");
    const picker = li.closest("[data-ordered-picker]");
    if (target.hasAttribute("data-op-up") && li.previousElementSibling) {
      li.parentElement.insertBefore(li, li.previousElementSibling);
    } else if (target.hasAttribute("data-op-down") && li.nextElementSibling) {
      li.parentElement.insertBefore(li.nextElementSibling, li);
    } else if (target.hasAttribute("data-op-remove")) {
      li.remove();
    }
    target.focus();
    refresh(picker);
  });
})();
