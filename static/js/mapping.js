// The column mapping page: tint each column by its chosen role, keep one
// column per role, mark the header row, dim sheets that are not read.
(function () {
  "use strict";
  const ROLE_CLASS = /\brole-[a-z_]*\b/g;

  const LETTERS = /^([A-Z]{1,3})(\d+):([A-Z]{1,3})(\d*)$/;

  function colIndex(letters) {
    let n = 0;
    for (const ch of letters) n = n * 26 + ch.charCodeAt(0) - 64;
    return n - 1;
  }

  function listOf(input) {
    return input ? input.value.toUpperCase().split(/[\s,;+]+/).filter(Boolean) : [];
  }

  // A price matrix: mark its body, its row label columns and its column header rows.
  function paintMatrix(section, on) {
    const body = section.querySelector("input.matrix-body");
    const m = on && body ? LETTERS.exec(body.value.trim().toUpperCase()) : null;
    const labels = on ? listOf(section.querySelector("input.matrix-row-labels")).map(colIndex) : [];
    const headers = on ? listOf(section.querySelector("input.matrix-header-rows")) : [];
    section.querySelectorAll("tbody tr[data-row]").forEach(function (row) {
      const r = Number(row.dataset.row);
      row.classList.toggle("matrix-header", headers.indexOf(row.dataset.row) >= 0);
      row.querySelectorAll("td[data-col]").forEach(function (cell) {
        const c = Number(cell.dataset.col);
        const inBody = !!m && r >= Number(m[2]) && (!m[4] || r <= Number(m[4]))
          && c >= colIndex(m[1]) && c <= colIndex(m[3]);
        cell.classList.toggle("in-body", inBody);
        cell.classList.toggle("row-label", on && labels.indexOf(c) >= 0 && !!m && r >= Number(m[2]));
      });
    });
  }

  function paint(section) {
    const mode = section.querySelector("input.sheet-mode:checked");
    const matrix = !!mode && mode.value === "matrix";
    section.classList.toggle("mode-matrix", matrix);
    paintMatrix(section, matrix);
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
      if (event.target.matches("input.header-row, .matrix-form input")) paint(section);
    });
    paint(section);
  });
})();
