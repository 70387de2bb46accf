// amrita-memory admin: small progressive enhancement only; every page works without it.
document.addEventListener("DOMContentLoaded", () => {
  // "Back" on an error page returns to the form that was refused (when there is one).
  for (const link of document.querySelectorAll("a[data-back]")) {
    link.addEventListener("click", (event) => {
      if (window.history.length > 1) {
        event.preventDefault();
        window.history.back();
      }
    });
  }
  // Changing a choice in the filter bar applies it at once.
  const filters = document.getElementById("filters");
  if (filters) {
    for (const select of filters.querySelectorAll("select")) {
      select.addEventListener("change", () => filters.requestSubmit());
    }
  }
  // The bulk form's "all" box ticks every row's box (the boxes name the form).
  for (const all of document.querySelectorAll("input[data-bulk-all]")) {
    all.addEventListener("change", () => {
      for (const box of document.querySelectorAll("input[name=sel][form=bulk-form]")) {
        box.checked = all.checked;
      }
    });
  }
  // Put the cursor where the first error is.
  const firstError = document.querySelector(".error");
  const form = firstError && firstError.parentElement.querySelector("form textarea, form input:not([type=hidden])");
  if (form) form.focus();
});
