// The reviewer console: show an item's source row, filter flagged items,
// and post only the inputs the reviewer changed.
(function () {
  "use strict";
  var grid = document.getElementById("review-grid");
  var pane = document.getElementById("source-pane");
  var form = document.getElementById("review-form");
  if (!grid) { return; }

  function showSource(row) {
    var previous = grid.querySelector("tr.item-current");
    if (previous) { previous.classList.remove("item-current"); }
    row.classList.add("item-current");
    var current = pane && pane.querySelector("tr.row-current");
    if (current) { current.classList.remove("row-current"); }
    var id = row.getAttribute("data-source");
    var target = id && document.getElementById(id);
    if (!target) { return; }
    target.classList.add("row-current");
    // Scroll the source pane only, so the grid stays where the reviewer is.
    if (pane) {
      var top = target.offsetTop - pane.clientHeight / 2 + target.offsetHeight / 2;
      pane.scrollTo({ top: Math.max(0, top), behavior: "smooth" });
    }
  }

  function itemRow(node) {
    var flags = node.closest("tr.item-flags");
    if (flags) { return document.getElementById("item-" + flags.getAttribute("data-item")); }
    return node.closest("tr.item-row");
  }

  grid.addEventListener("click", function (event) {
    var row = itemRow(event.target);
    if (!row) { return; }
    if (event.target.closest("a")) { event.preventDefault(); }
    showSource(row);
  });
  grid.addEventListener("focusin", function (event) {
    var row = itemRow(event.target);
    if (row && !row.classList.contains("item-current")) { showSource(row); }
  });

  var onlyFlagged = document.getElementById("only-flagged");
  if (onlyFlagged) {
    onlyFlagged.addEventListener("change", function () {
      grid.classList.toggle("only-flagged", onlyFlagged.checked);
    });
  }

  // Preview the sheet-wide currency in the empty currency cells it will fill.
  var currency = document.getElementById("currency-override");
  if (currency) {
    currency.addEventListener("change", function () {
      grid.querySelectorAll("td.field-currency input").forEach(function (input) {
        input.placeholder = currency.value;
      });
    });
  }

  if (form) {
    // Unchanged cells are not posted: a sheet of thousands of items stays a
    // small request, and the server treats a missing cell as unchanged.
    form.addEventListener("submit", function () {
      grid.querySelectorAll("input:not([type=checkbox])").forEach(function (input) {
        if (input.value === input.defaultValue) { input.disabled = true; }
      });
    });
    window.addEventListener("pageshow", function () {
      grid.querySelectorAll("input[disabled]").forEach(function (input) { input.disabled = false; });
    });
  }

  var first = grid.querySelector("tr.item-flagged");
  if (first && first.getAttribute("data-source")) {
    var target = document.getElementById(first.getAttribute("data-source"));
    if (target && pane) { target.classList.add("row-current"); pane.scrollTop = Math.max(0, target.offsetTop - 80); }
  }
}());
