// The column mapping page: tint each column by its chosen role, keep one
// column per role, mark the header row, dim sheets that are not read.
(function () {
  "use strict";
  const ROLE_CLASS = /\brole-[a-z_]*\b/g;

  function paint(section) {
    const roles = {};
    section.querySelectorAll("select.role").forEach(function (select) {
      roles[select.dataset.col] = select.value;
    });
    section.querySelectorAll("[data-col]").forEach(function (cell) {
      if (cell.tagName === "SELECT") return;
      const role = roles[cell.dataset.col] || "other";
      cell.className = (cell.className.replace(ROLE_CLASS, "").trim() + " role-" + role).trim();
    });
    const headerInput = section.querySelector("input.header-row");
    const header = headerInput && headerInput.value ? headerInput.value : "";
    section.querySelectorAll("tbody tr[data-row]").forEach(function (row) {
      row.classList.toggle("header-row-current", row.dataset.row === header);
    });
    const read = section.querySelector("input.sheet-read");
    section.classList.toggle("sheet-off", !!read && !read.checked);
  }

  document.querySelectorAll("section.mapped-sheet").forEach(function (section) {
    section.addEventListener("change", function (event) {
      const target = event.target;
      if (target.matches("select.role") && target.value !== "other") {
        // One column per role: the column that had it before goes back to "not read".
        section.querySelectorAll("select.role").forEach(function (other) {
          if (other !== target && other.value === target.value) other.value = "other";
        });
      }
      paint(section);
    });
    section.addEventListener("input", function (event) {
      if (event.target.matches("input.header-row")) paint(section);
    });
    paint(section);
  });
})();
