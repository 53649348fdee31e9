// The reviewer's grid: rows fetched in pages and drawn only where they are
// visible, keyboard navigation and editing, bulk fixes, undo/redo of unsaved
// edits, the source rows near the current item, and approval with a summary.
// No inline script: the page's data comes from the JSON block #grid-config.
(function () {
  "use strict";
  var configNode = document.getElementById("grid-config");
  var grid = document.getElementById("review-grid");
  if (!configNode || !grid) { return; }
  var config = JSON.parse(configNode.textContent);

  var ROW_HEIGHT = 34;
  var PAGE = 200;
  var OVERSCAN = 10;
  var COLUMNS = ["num"].concat(config.fields, ["source", "state"]);
  var EDITABLE = {};
  config.fields.forEach(function (name) { EDITABLE[name] = true; });

  var viewport = document.getElementById("grid-viewport");
  var spacer = document.getElementById("grid-spacer");
  var body = document.getElementById("grid-body");
  var details = document.getElementById("row-details");
  var message = document.getElementById("grid-message");
  var sourceRows = document.getElementById("source-rows");
  var sourceTitle = document.getElementById("source-title");

  var pages = {};          // page number -> items (as the server has them)
  var loading = {};        // page number -> true while fetched
  var active = { row: 0, col: 1 };
  var editing = null;      // {row, col, input}
  var selected = {};       // index -> true
  var anchor = null;
  // Unsaved edits, in the body format of the approve endpoint.
  var pending = emptyPending();
  var undoStack = [];
  var redoStack = [];
  var flagged = config.flagged.slice();
  // The item indexes a filter shows, in order (null: every item). Rows are
  // drawn by position in this list; everything else speaks item indexes.
  var view = null;
  var filterLabel = "";

  function rowCount() { return view ? view.length : config.total; }
  function indexAt(position) { return view ? view[position] : position; }
  function positionOf(index) {
    if (!view) { return index; }
    var low = 0, high = view.length - 1;
    while (low <= high) {
      var mid = (low + high) >> 1;
      if (view[mid] === index) { return mid; }
      if (view[mid] < index) { low = mid + 1; } else { high = mid - 1; }
    }
    return -1;
  }
  // The item `delta` rows away from `index` in the rows shown.
  function step(index, delta) {
    var position = positionOf(index);
    if (position < 0) { position = 0; }
    return indexAt(Math.max(0, Math.min(rowCount() - 1, position + delta)));
  }

  function emptyPending() { return { rows: {}, omit: {}, sets: [], replace: [] }; }
  function isDirty() {
    return Object.keys(pending.rows).length > 0 || Object.keys(pending.omit).length > 0 ||
      pending.sets.length > 0 || pending.replace.length > 0;
  }

  // --- data --------------------------------------------------------------
  function itemAt(index) {
    var page = pages[Math.floor(index / PAGE)];
    return page ? page[index % PAGE] : null;
  }

  function fetchPage(number) {
    if (pages[number] || loading[number] || number * PAGE >= config.total) { return; }
    loading[number] = true;
    fetch(config.urls.items + "?start=" + number * PAGE + "&count=" + PAGE, { credentials: "same-origin" })
      .then(function (r) { if (!r.ok) { throw new Error("HTTP " + r.status); } return r.json(); })
      .then(function (data) {
        pages[number] = data.items;
        delete loading[number];
        render();
        grid.setAttribute("data-loaded", "true");
        if (Math.floor(active.row / PAGE) === number) { showDetails(); }
      })
      .catch(function (error) {
        delete loading[number];
        say("The items could not be loaded (" + error.message + "); reload the page.");
      });
  }

  function inScope(item, name, scope) {
    if (scope === "all") { return true; }
    if (scope === "flagged") { return (item.flags || []).length > 0; }
    var value = item[name];
    return value === null || value === undefined || value === "" ||
      (item.flags || []).some(function (f) { return f.field === name; });
  }

  // The value the grid shows: the server's, with the unsaved edits applied
  // in the order the server applies them (sheet values, replace, row values).
  function shown(index, name) {
    var item = itemAt(index);
    if (!item) { return ""; }
    var value = item[name];
    pending.sets.forEach(function (rule) {
      if (rule.field === name && inScope(item, name, rule.scope)) { value = rule.value; }
    });
    pending.replace.forEach(function (rule) {
      if (rule.field !== name) { return; }
      var text = value === null || value === undefined ? "" : String(value).trim();
      if (name === "unit_price" && text !== "" && rule.find.trim() !== "" &&
          Number(text) === Number(rule.find.trim())) {
        value = rule.replace;  // "12.5" finds the price shown as 12.50
      } else if (rule.whole || (name !== "sku" && name !== "description")) {
        if (text.toLowerCase() === rule.find.trim().toLowerCase()) { value = rule.replace; }
      } else if (text.indexOf(rule.find) !== -1) {
        value = text.split(rule.find).join(rule.replace);
      }
    });
    var own = pending.rows[index];
    if (own && Object.prototype.hasOwnProperty.call(own, name)) { value = own[name]; }
    return value === null || value === undefined ? "" : String(value);
  }

  function isOmitted(index) {
    if (Object.prototype.hasOwnProperty.call(pending.omit, index)) { return pending.omit[index]; }
    var item = itemAt(index);
    return !!(item && item.omitted);
  }

  function isEdited(index, name) {
    var own = pending.rows[index];
    return !!(own && Object.prototype.hasOwnProperty.call(own, name));
  }

  // --- changes, undo and redo -------------------------------------------
  function change(mutate) {
    undoStack.push(JSON.stringify(pending));
    redoStack = [];
    mutate();
    changed();
  }
  function changed() {
    showCounts();
    setDisabled("undo", undoStack.length === 0);
    setDisabled("redo", redoStack.length === 0);
    render();
    showDetails();
  }
  function undo() {
    if (!undoStack.length) { return; }
    redoStack.push(JSON.stringify(pending));
    pending = JSON.parse(undoStack.pop());
    changed();
    say("Undone.");
  }
  function redo() {
    if (!redoStack.length) { return; }
    undoStack.push(JSON.stringify(pending));
    pending = JSON.parse(redoStack.pop());
    changed();
    say("Redone.");
  }
  function setValue(index, name, value) {
    if (!pending.rows[index]) { pending.rows[index] = {}; }
    pending.rows[index][name] = value;
  }

  // --- drawing -----------------------------------------------------------
  function visibleRange() {
    var first = Math.max(0, Math.floor(viewport.scrollTop / ROW_HEIGHT) - OVERSCAN);
    var count = Math.ceil(viewport.clientHeight / ROW_HEIGHT) + 2 * OVERSCAN;
    return { first: first, last: Math.min(rowCount() - 1, first + count) };
  }

  function cellFlags(item, name) {
    return (item && item.flags || []).filter(function (f) {
      if (name === "source") { return config.fields.indexOf(f.field) === -1; }
      return f.field === name;
    });
  }

  function render() {
    spacer.style.height = (rowCount() * ROW_HEIGHT) + "px";
    var range = visibleRange();
    if (range.last >= range.first) {
      for (var p = Math.floor(indexAt(range.first) / PAGE); p <= Math.floor(indexAt(range.last) / PAGE); p++) {
        if (!view || pageShown(p, range)) { fetchPage(p); }
      }
    }
    var focused = document.activeElement && body.contains(document.activeElement);
    var fragment = document.createDocumentFragment();
    for (var position = range.first; position <= range.last; position++) {
      fragment.appendChild(drawRow(indexAt(position), position));
    }
    body.style.transform = "translateY(" + range.first * ROW_HEIGHT + "px)";
    var editingAt = editing ? positionOf(editing.row) : -1;
    if (editing && editingAt >= range.first && editingAt <= range.last) {
      // Keep the open editor (and what is typed in it) across redraws.
      body.textContent = "";
      body.appendChild(fragment);
      var holder = cellNode(editing.row, editing.col);
      if (holder) { holder.textContent = ""; holder.appendChild(editing.input); editing.input.focus(); }
      return;
    }
    body.textContent = "";
    body.appendChild(fragment);
    if (focused) { focusActive(); }
  }

  function pageShown(number, range) {
    for (var position = range.first; position <= range.last; position++) {
      if (Math.floor(indexAt(position) / PAGE) === number) { return true; }
    }
    return false;
  }

  function drawRow(index, position) {
    var item = itemAt(index);
    var row = document.createElement("div");
    row.setAttribute("role", "row");
    row.className = "grid-row";
    row.setAttribute("aria-rowindex", String(position + 2));
    row.setAttribute("aria-selected", selected[index] ? "true" : "false");
    row.dataset.index = index;
    if (isOmitted(index)) { row.classList.add("omitted"); }
    if (item && (item.flags || []).length) { row.classList.add("flagged"); }
    if (index === active.row) { row.classList.add("current"); }
    COLUMNS.forEach(function (name, col) {
      var cell = document.createElement("div");
      cell.setAttribute("role", "gridcell");
      cell.className = "c-" + name;
      cell.dataset.col = col;
      cell.tabIndex = (index === active.row && col === active.col) ? 0 : -1;
      var text;
      if (!item) {
        text = name === "num" ? String(index + 1) : "…";
      } else if (name === "num") {
        text = String(index + 1);
      } else if (name === "source") {
        var source = item.source || {};
        // A matrix item cites its cell ("Sheet1:B3"), a list item its row.
        text = (source.sheet || "?") + ":" + (source.column || "") + (source.row || "?");
      } else if (name === "state") {
        text = isOmitted(index) ? "omitted" : (isDirty() && rowDirty(index) ? "edited" : "");
      } else {
        text = shown(index, name);
      }
      cell.textContent = text;
      if (text && name !== "num") { cell.title = text; }  // the whole value, when the column cuts it
      if (item && name !== "num" && name !== "state") {
        var flags = fixedNow(index, name) ? [] : cellFlags(item, name);
        if (flags.length) {
          cell.classList.add("cell-flagged");
          cell.title = (text ? text + ": " : "") + flags.map(function (f) { return f.message; }).join(" ");
          var hidden = document.createElement("span");
          hidden.className = "visually-hidden";
          hidden.textContent = " (flagged)";
          cell.appendChild(hidden);
        }
        if (EDITABLE[name] && (isEdited(index, name) || (item.provenance && item.provenance[name]))) {
          cell.classList.add("by-hand");
        }
      }
      if (EDITABLE[name] && !config.editable) { cell.setAttribute("aria-readonly", "true"); }
      row.appendChild(cell);
    });
    return row;
  }

  // A value checked and set since the last save answers the flags about
  // what it is (and that the source row does not hold it): their mark goes.
  function fixedNow(index, name) {
    if (!EDITABLE[name]) { return false; }
    var item = itemAt(index);
    var set = isEdited(index, name) || pending.sets.some(function (rule) {
      return rule.field === name && inScope(item, name, rule.scope);
    });
    return set && cellFlags(item, name).every(function (f) { return config.value_codes.indexOf(f.code) !== -1; });
  }

  function rowDirty(index) {
    return !!pending.rows[index] || Object.prototype.hasOwnProperty.call(pending.omit, index);
  }

  function cellNode(row, col) {
    return body.querySelector('[data-index="' + row + '"] [data-col="' + col + '"]');
  }

  function focusActive() {
    var node = cellNode(active.row, active.col);
    if (node) { node.focus({ preventScroll: true }); }
  }

  function scrollToActive() {
    var top = Math.max(0, positionOf(active.row)) * ROW_HEIGHT;
    if (top < viewport.scrollTop) {
      viewport.scrollTop = top;
    } else if (top + ROW_HEIGHT > viewport.scrollTop + viewport.clientHeight) {
      viewport.scrollTop = top + ROW_HEIGHT - viewport.clientHeight;
    }
  }

  function moveTo(row, col, options) {
    if (rowCount() === 0) { return; }
    var previous = active.row;
    if (positionOf(row) < 0) { row = step(row, 0); }
    active = { row: row, col: Math.max(0, Math.min(COLUMNS.length - 1, col)) };
    if (options && options.center) {
      viewport.scrollTop = Math.max(0, positionOf(active.row) * ROW_HEIGHT - viewport.clientHeight / 2);
    } else {
      scrollToActive();
    }
    render();
    focusActive();
    if (previous !== active.row || (options && options.force)) { showDetails(); }
  }

  // --- the current row's details and source rows ------------------------
  var sourceTimer = null;
  function showDetails() {
    var index = active.row;
    var item = itemAt(index);
    details.textContent = "";
    if (!item) { return; }
    var title = document.createElement("strong");
    title.textContent = "Item " + (index + 1) + (isOmitted(index) ? " (omitted)" : "");
    details.appendChild(title);
    var list = document.createElement("ul");
    (item.flags || []).forEach(function (flag) {
      var li = document.createElement("li");
      li.className = "flag";
      var label = config.labels[flag.field] || flag.field || "row";
      var kind = config.flags[flag.code];  // the flag registry: its name and what clears it
      li.textContent = label + ": " + flag.message + (kind ? " (" + kind.name + ": " + kind.hint + ")" : "");
      list.appendChild(li);
    });
    config.fields.forEach(function (name) {
      var provenance = item.provenance && item.provenance[name];
      var unsaved = isEdited(index, name);
      if (!provenance && !unsaved) { return; }
      var li = document.createElement("li");
      li.className = "provenance";
      var extracted = provenance ? provenance.extracted : item[name];
      var text = config.labels[name] + ": " + (shown(index, name) || "—") + " (extracted: " +
        (extracted === null || extracted === undefined || extracted === "" ? "—" : extracted) + "; ";
      text += unsaved ? "not saved yet)" : "set by " + provenance.by + " at " + provenance.at + ")";
      li.textContent = text;
      list.appendChild(li);
    });
    if (list.childNodes.length) { details.appendChild(list); }
    clearTimeout(sourceTimer);
    sourceTimer = setTimeout(function () { loadSource(item); }, 120);
  }

  var sourceCache = {};
  function loadSource(item) {
    var source = item.source || {};
    if (!source.sheet || !source.row || !sourceRows) { return; }
    var key = source.sheet + "\u0000" + source.row;
    var done = function (data) { drawSource(data, source.row, source.column); };
    if (sourceCache[key]) { done(sourceCache[key]); return; }
    var url = config.urls.source + "?sheet=" + encodeURIComponent(source.sheet) + "&row=" + source.row + "&around=12";
    fetch(url, { credentials: "same-origin" })
      .then(function (r) { return r.json(); })
      .then(function (data) { sourceCache[key] = data; done(data); })
      .catch(function () { sourceRows.textContent = "The source rows could not be loaded."; });
  }

  function columnIndex(letters) {
    var n = 0;
    for (var i = 0; i < letters.length; i++) { n = n * 26 + letters.charCodeAt(i) - 64; }
    return n - 1;
  }

  function drawSource(data, cited, citedColumn) {
    var citedCell = citedColumn ? columnIndex(citedColumn) : -1;
    sourceTitle.textContent = "Source · " + data.sheet + (data.total ? " (" + data.total + " rows)" : "");
    sourceRows.textContent = "";
    if (!data.found) {
      var missing = document.createElement("p");
      missing.className = "muted";
      missing.textContent = "The sheet " + data.sheet + " is not in the file.";
      sourceRows.appendChild(missing);
      return;
    }
    var table = document.createElement("table");
    table.className = "source-table";
    var tbody = document.createElement("tbody");
    data.rows.forEach(function (cells, n) {
      var number = data.first + n;
      var tr = document.createElement("tr");
      if (number === cited) { tr.className = "row-current"; tr.id = "source-current"; }
      var th = document.createElement("th");
      th.scope = "row";
      th.textContent = String(number);
      tr.appendChild(th);
      cells.forEach(function (text, col) {
        var td = document.createElement("td");
        td.textContent = text;
        if (number === cited && col === citedCell) { td.className = "cell-current"; }
        tr.appendChild(td);
      });
      tbody.appendChild(tr);
    });
    table.appendChild(tbody);
    sourceRows.appendChild(table);
    var current = document.getElementById("source-current");
    var pane = document.getElementById("source-pane");
    if (current && pane) { pane.scrollTop = Math.max(0, current.offsetTop - pane.clientHeight / 2); }
  }

  // --- editing -------------------------------------------------------------
  function startEdit(initial) {
    var name = COLUMNS[active.col];
    if (!config.editable || !EDITABLE[name] || !itemAt(active.row)) { return false; }
    var node = cellNode(active.row, active.col);
    if (!node) { return false; }
    var input = document.createElement("input");
    input.className = "cell-editor";
    input.value = initial !== undefined ? initial : shown(active.row, name);
    input.setAttribute("aria-label", config.labels[name] + " of item " + (active.row + 1));
    if (name === "currency") { input.setAttribute("list", "currency-list"); }
    if (name === "unit") { input.setAttribute("list", "unit-list"); }
    input.autocomplete = "off";
    editing = { row: active.row, col: active.col, input: input };
    node.textContent = "";
    node.appendChild(input);
    input.focus();
    if (initial === undefined) { input.select(); }
    return true;
  }

  // A value is checked as its cell is committed (price, currency, unit,
  // pack): a refused one stays in the open cell with the reason, uncommitted.
  var currencies = {};
  document.querySelectorAll("#currency-list option").forEach(function (o) { currencies[o.value] = true; });

  // Price, pack and currency are checked here, at once (the same rules as
  // the server's, which checks again on save); a unit asks the server,
  // which knows every written form of every unit.
  function localCheck(name, value) {
    var text = value.trim();
    var refuse = function () {
      return { ok: false, message: config.check_messages[name].replace("{value!r}", "'" + text + "'") };
    };
    if (name === "currency") {
      if (!text) { return { ok: true, value: "" }; }
      return currencies[text.toUpperCase()] ? { ok: true, value: text.toUpperCase() } : refuse();
    }
    if (name === "unit_price" || name === "pack_size") {
      if (!text && name === "pack_size") { return { ok: true, value: "" }; }
      var plain = (text.split(",").length === 2 && text.indexOf(".") === -1) ? text.replace(",", ".") : text;
      var number = /^\d+(?:\.\d+)?$/.test(plain) ? Number(plain) : NaN;
      return number > 0 ? { ok: true, value: name === "unit_price" ? plain : String(number) } : refuse();
    }
    return null;
  }

  // `done` gets {ok, value} or {ok: false, message}; at once when it can.
  function checkValue(name, value, index, done) {
    if (config.checked_fields.indexOf(name) === -1) { done({ ok: true, value: value }); return; }
    var local = localCheck(name, value);
    if (local) { done(local); return; }
    var item = index === null ? null : itemAt(index);
    var url = config.urls.check + "?field=" + encodeURIComponent(name) + "&value=" + encodeURIComponent(value) +
      "&description=" + encodeURIComponent(item ? shown(index, "description") : "");
    fetch(url, { credentials: "same-origin" }).then(function (r) {
      if (!r.ok) { throw new Error("HTTP " + r.status); }
      return r.json();
    }).then(done).catch(function (error) {
      done({ ok: false, message: "the value could not be checked (" + error.message + "); try again." });
    });
  }

  function finishEdit(keep, then, leaving) {
    if (!editing) { if (then) { then(); } return; }
    var edit = editing;
    var name = COLUMNS[edit.col];
    var value = edit.input.value;
    if (!keep || value === shown(edit.row, name)) {
      editing = null;
      render();
      focusActive();
      if (keep && then) { then(); }
      return;
    }
    // While the server checks the value, what comes next (the move, a save,
    // approving) waits for its answer.
    if (edit.checking) { if (then) { edit.waiting.push(then); } return; }
    edit.checking = true;
    edit.waiting = then ? [then] : [];
    checkValue(name, value, edit.row, function (answer) {
      edit.checking = false;
      if (editing !== edit) { return; }
      if (!answer.ok) {
        edit.input.setAttribute("aria-invalid", "true");
        edit.input.setAttribute("aria-describedby", "grid-message");
        edit.input.title = answer.message;
        say("Not kept: " + answer.message, "error");
        if (!leaving) { edit.input.focus(); }
        return;
      }
      editing = null;
      var kept = answer.value === null || answer.value === undefined ? "" : String(answer.value);
      say("");
      change(function () { setValue(edit.row, name, kept); });
      focusActive();
      edit.waiting.forEach(function (next) { next(); });
    });
  }

  function editorKey(event) {
    if (event.key === "Enter") {
      event.preventDefault();
      finishEdit(true, function () { moveTo(step(active.row, 1), active.col); });
    } else if (event.key === "Escape") {
      event.preventDefault();
      finishEdit(false);
      say("");
    } else if (event.key === "Tab") {
      event.preventDefault();
      var col = active.col + (event.shiftKey ? -1 : 1);
      finishEdit(true, function () { moveTo(active.row, col); });
    }
  }

  // --- commands ------------------------------------------------------------
  function targets() {
    var chosen = Object.keys(selected).map(Number).sort(function (a, b) { return a - b; });
    return chosen.length ? chosen : [active.row];
  }

  function toggleSelect(index, extend) {
    if (extend && anchor !== null) {
      var low = Math.min(positionOf(anchor), positionOf(index));
      var high = Math.max(positionOf(anchor), positionOf(index));
      for (var i = Math.max(0, low); i <= high; i++) { selected[indexAt(i)] = true; }
    } else {
      if (selected[index]) { delete selected[index]; } else { selected[index] = true; }
      anchor = index;
    }
    showCounts();
    render();
    focusActive();
  }

  function fillDown() {
    var name = COLUMNS[active.col];
    if (!config.editable || !EDITABLE[name]) { return; }
    var rows = targets();
    if (rows.length > 1) {
      var value = shown(rows[0], name);
      change(function () { rows.slice(1).forEach(function (i) { setValue(i, name, value); }); });
      say("Filled " + config.labels[name] + " down into " + (rows.length - 1) + " items.");
    } else if (positionOf(active.row) > 0) {
      var above = shown(step(active.row, -1), name);
      change(function () { setValue(active.row, name, above); });
    }
  }

  function toggleOmit() {
    if (!config.editable) { return; }
    var rows = targets();
    var omit = !isOmitted(rows[0]);
    change(function () {
      rows.forEach(function (i) {
        var item = itemAt(i);
        if (item && !!item.omitted === omit) { delete pending.omit[i]; } else { pending.omit[i] = omit; }
      });
    });
    say((omit ? "Omitted " : "Restored ") + rows.length + " item" + (rows.length === 1 ? "" : "s") + ".");
  }

  // Flagged items come as inclusive runs [first, last], in order.
  function nextFlagged(direction) {
    if (view) { goToFlaggedCell(step(active.row, direction > 0 ? 1 : -1)); return; }
    if (!flagged.length) { say("No item is flagged."); return; }
    var row = active.row, target = null, i;
    if (direction > 0) {
      for (i = 0; i < flagged.length; i++) {
        if (flagged[i][1] > row) { target = Math.max(flagged[i][0], row + 1); break; }
      }
      if (target === null) { target = flagged[0][0]; }
    } else {
      for (i = flagged.length - 1; i >= 0; i--) {
        if (flagged[i][0] < row) { target = Math.min(flagged[i][1], row - 1); break; }
      }
      if (target === null) { target = flagged[flagged.length - 1][1]; }
    }
    goToFlaggedCell(target);
  }

  function goToFlaggedCell(index) {
    if (view && positionOf(index) < 0) { clearFilter(); }
    var col = 1;
    var item = itemAt(index);
    if (item) {
      for (var c = 1; c < COLUMNS.length; c++) {
        if (cellFlags(item, COLUMNS[c]).length) { col = c; break; }
      }
    }
    moveTo(index, col, { center: true, force: true });
    if (!item) {
      // The page is being fetched: land on the flagged cell once it is here.
      var wait = setInterval(function () {
        if (itemAt(index)) { clearInterval(wait); if (active.row === index) { goToFlaggedCell(index); } }
      }, 50);
      setTimeout(function () { clearInterval(wait); }, 5000);
    }
  }

  grid.addEventListener("keydown", function (event) {
    if (editing) { editorKey(event); return; }
    var key = event.key;
    var ctrl = event.ctrlKey || event.metaKey;
    var pageRows = Math.max(1, Math.floor(viewport.clientHeight / ROW_HEIGHT) - 1);
    var handled = true;
    if (key === "ArrowDown") { moveTo(step(active.row, 1), active.col); }
    else if (key === "ArrowUp") { moveTo(step(active.row, -1), active.col); }
    else if (key === "ArrowRight") { moveTo(active.row, active.col + 1); }
    else if (key === "ArrowLeft") { moveTo(active.row, active.col - 1); }
    else if (key === "PageDown") { moveTo(step(active.row, pageRows), active.col); }
    else if (key === "PageUp") { moveTo(step(active.row, -pageRows), active.col); }
    else if (key === "Home") { moveTo(ctrl ? indexAt(0) : active.row, 0); }
    else if (key === "End") { moveTo(ctrl ? indexAt(rowCount() - 1) : active.row, COLUMNS.length - 1); }
    else if (key === "Tab") {
      var col = active.col + (event.shiftKey ? -1 : 1);
      if (col < 0 || col >= COLUMNS.length) { handled = false; } else { moveTo(active.row, col); }
    }
    else if (key === "Enter" || key === "F2") { handled = startEdit(); }
    else if (key === "F8") { nextFlagged(event.shiftKey ? -1 : 1); }
    else if (ctrl && (key === "s" || key === "S")) { save(); }
    else if (key === " " ) { toggleSelect(active.row, event.shiftKey); }
    else if (ctrl && (key === "d" || key === "D")) { fillDown(); }
    else if (ctrl && !event.shiftKey && (key === "z" || key === "Z")) { undo(); }
    else if (ctrl && (key === "y" || key === "Y" || (event.shiftKey && (key === "z" || key === "Z")))) { redo(); }
    else if (key === "Delete" && event.shiftKey) { toggleOmit(); }
    else if (key === "Delete" || key === "Backspace") {
      var name = COLUMNS[active.col];
      if (config.editable && EDITABLE[name] && shown(active.row, name) !== "") {
        change(function () { setValue(active.row, name, ""); });
      }
    }
    else if (key.length === 1 && !ctrl && !event.altKey) { handled = startEdit(key); }
    else { handled = false; }
    if (handled) { event.preventDefault(); }
  });

  grid.addEventListener("click", function (event) {
    var cell = event.target.closest('[role="gridcell"]');
    if (!cell || cell.querySelector("input")) { return; }
    var row = Number(cell.parentNode.dataset.index);
    var col = Number(cell.dataset.col);
    if (col === 0) { toggleSelect(row, event.shiftKey); }
    moveTo(row, col, { force: true });
  });
  grid.addEventListener("dblclick", function (event) {
    if (event.target.closest('[role="gridcell"]')) { startEdit(); }
  });
  grid.addEventListener("focusout", function (event) {
    if (editing && event.target === editing.input && !grid.contains(event.relatedTarget)) {
      finishEdit(true, null, true);
    }
  });

  var ticking = false;
  viewport.addEventListener("scroll", function () {
    if (ticking) { return; }
    ticking = true;
    window.requestAnimationFrame(function () { ticking = false; render(); });
  });

  // --- toolbar and bulk fixes ------------------------------------------
  function on(id, type, handler) {
    var node = document.getElementById(id);
    if (node) { node.addEventListener(type, handler); }
  }
  function setHidden(id, value) {
    var node = document.getElementById(id);
    if (node) { node.hidden = value; }
  }
  function setDisabled(id, value) {
    var node = document.getElementById(id);
    if (node) { node.disabled = value; }
  }
  function say(text, kind) {
    message.textContent = text;
    message.className = "messages-inline" + (kind ? " " + kind : "");
  }

  on("next-flagged", "click", function () { nextFlagged(1); });
  on("prev-flagged", "click", function () { nextFlagged(-1); });
  on("fill-down", "click", fillDown);
  on("toggle-omit", "click", toggleOmit);
  on("undo", "click", undo);
  on("redo", "click", redo);

  var setField = document.getElementById("set-field");
  if (setField) {
    setField.addEventListener("change", function () {
      var input = document.getElementById("set-value");
      var lists = { currency: "currency-list", unit: "unit-list" };
      if (lists[setField.value]) { input.setAttribute("list", lists[setField.value]); } else { input.removeAttribute("list"); }
    });
  }
  on("set-form", "submit", function (event) {
    event.preventDefault();
    var name = setField.value;
    var value = document.getElementById("set-value").value.trim();
    var scope = document.getElementById("set-scope").value;
    if (name === "currency") { value = value.toUpperCase(); }
    var box = document.getElementById("set-value");
    if (value !== "") {
      checkValue(name, value, null, function (answer) {
        if (!answer.ok) {
          box.setAttribute("aria-invalid", "true");
          say("Not applied: " + answer.message, "error");
          box.focus();
          return;
        }
        box.removeAttribute("aria-invalid");
        applySet(name, String(answer.value), scope);
      });
      return;
    }
    applySet(name, value, scope);
  });
  function applySet(name, value, scope) {
    if (scope === "selected") {
      var rows = targets();
      change(function () { rows.forEach(function (i) { setValue(i, name, value); }); });
      say(config.labels[name] + " set to " + (value || "nothing") + " on " + rows.length + " item(s); not saved yet.");
    } else {
      change(function () { pending.sets.push({ field: name, value: value, scope: scope }); });
      say(config.labels[name] + " set to " + (value || "nothing") + " for " + scope + " items; not saved yet.");
    }
  }
  on("map-form", "submit", function (event) {
    event.preventDefault();
    var from = document.getElementById("map-from").value.trim();
    var to = document.getElementById("map-to").value.trim();
    if (!from) { say("Say which unit word to map."); return; }
    checkValue("unit", to, null, function (answer) {
      if (!answer.ok) { say("Not applied: " + answer.message, "error"); return; }
      change(function () { pending.replace.push({ field: "unit", find: from, replace: to, whole: true }); });
      say("Unit “" + from + "” means “" + to + "” for the whole sheet; not saved yet.");
    });
  });
  on("replace-form", "submit", function (event) {
    event.preventDefault();
    var name = document.getElementById("replace-field").value;
    var find = document.getElementById("replace-find").value;
    var replacement = document.getElementById("replace-with").value;
    if (!find) { say("Say what to find."); return; }
    change(function () { pending.replace.push({ field: name, find: find, replace: replacement, whole: false }); });
    say("“" + find + "” replaced with “" + replacement + "” in " + config.labels[name] + "; not saved yet.");
  });

  // The summary is redrawn after each save: one listener for its links.
  document.addEventListener("click", function (event) {
    var link = event.target.closest && event.target.closest("a.goto-item");
    if (!link) { return; }
    event.preventDefault();
    goToFlaggedCell(Number(link.dataset.item));
  });
  on("skip-to-grid", "click", function (event) {
    event.preventDefault();
    grid.scrollIntoView({ block: "start" });
    moveTo(active.row, active.col, { force: true });
  });

  // --- filters -------------------------------------------------------------
  function expand(ranges) {
    var out = [];
    ranges.forEach(function (run) { for (var i = run[0]; i <= run[1]; i++) { out.push(i); } });
    return out;
  }

  function filterQuery() {
    var flag = document.getElementById("filter-flag").value;
    var name = document.getElementById("filter-field").value;
    var blocking = document.getElementById("filter-blocking").checked;
    var words = [];
    words.push(flag ? ((config.flags[flag] && config.flags[flag].name) || flag) : "any flag");
    if (name) { words.push("on " + (config.labels[name] || "the row")); }
    if (blocking) { words.push("blocking only"); }
    return { url: config.urls.matches + "?flag=" + encodeURIComponent(flag) + "&field=" +
             encodeURIComponent(name) + (blocking ? "&blocking=1" : ""), label: words.join(", ") };
  }

  function applyFilter(query) {
    return fetch(query.url, { credentials: "same-origin" })
      .then(function (r) { if (!r.ok) { throw new Error("HTTP " + r.status); } return r.json(); })
      .then(function (data) {
        view = expand(data.ranges);
        filterLabel = query.label;
        setHidden("filter-clear", false);
        setHidden("select-shown", !view.length);
        viewport.scrollTop = 0;
        if (view.length) { active.row = positionOf(active.row) >= 0 ? active.row : view[0]; }
        showCounts();
        render();
        if (view.length) { moveTo(active.row, active.col, { center: true, force: true }); }
      })
      .catch(function (error) { say("The filter could not be applied (" + error.message + ")."); });
  }

  function clearFilter() {
    if (!view) { return; }
    view = null;
    filterLabel = "";
    setHidden("filter-clear", true);
    setHidden("select-shown", true);
    showCounts();
    render();
  }

  on("filter-form", "submit", function (event) {
    event.preventDefault();
    applyFilter(filterQuery());
  });
  on("filter-clear", "click", function () {
    clearFilter();
    moveTo(active.row, active.col, { center: true, force: true });
  });
  on("select-shown", "click", function () {
    if (!view) { return; }
    view.forEach(function (i) { selected[i] = true; });
    showCounts();
    render();
    say(view.length + " items selected: Omit / restore, Set … for selected items and Fill down act on all of them.");
  });

  function showCounts() {
    var count = Object.keys(selected).length;
    document.getElementById("selection-count").textContent = count ? count + " selected" : "";
    var text = view ? view.length + " of " + config.total + " items shown (" + filterLabel + ")" : "";
    var omitted = 0, restored = 0;
    Object.keys(pending.omit).forEach(function (i) { if (pending.omit[i]) { omitted++; } else { restored++; } });
    var unsaved = [];
    if (Object.keys(pending.rows).length) { unsaved.push(Object.keys(pending.rows).length + " edited"); }
    if (omitted) { unsaved.push(omitted + " omitted"); }
    if (restored) { unsaved.push(restored + " restored"); }
    if (unsaved.length) { text += (text ? " · " : "") + "unsaved: " + unsaved.join(", "); }
    document.getElementById("view-count").textContent = text;
  }

  // --- save, approve ---------------------------------------------------
  function csrfToken() {
    var match = document.cookie.match(/(?:^|;\s*)csrftoken=([^;]+)/);
    if (match) { return decodeURIComponent(match[1]); }
    var field = document.querySelector("input[name=csrfmiddlewaretoken]");
    return field ? field.value : "";
  }

  function requestBody() {
    var items = [];
    var indexes = {};
    Object.keys(pending.rows).forEach(function (i) { indexes[i] = true; });
    Object.keys(pending.omit).forEach(function (i) { indexes[i] = true; });
    Object.keys(indexes).map(Number).sort(function (a, b) { return a - b; }).forEach(function (i) {
      var entry = { index: i };
      if (pending.rows[i]) { entry.set = pending.rows[i]; }
      if (Object.prototype.hasOwnProperty.call(pending.omit, i)) { entry.omit = pending.omit[i]; }
      items.push(entry);
    });
    var sets = pending.sets.map(function (rule) {
      return { field: rule.field, value: rule.value === "" ? null : rule.value, scope: rule.scope };
    }).filter(function (rule) { return rule.value !== null; });
    return { version: config.version, items: items, sets: sets, replace: pending.replace };
  }

  function post(url, body) {
    return fetch(url, {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrfToken() },
      body: JSON.stringify(body)
    }).then(function (response) {
      return response.json().catch(function () { return {}; }).then(function (data) {
        return { status: response.status, data: data };
      });
    });
  }

  var leaving = false;
  function reloadClean() {
    leaving = true;
    window.location.reload();
  }

  function problemText(data) {
    var text = data.detail || data.title || "The request failed.";
    return text;
  }

  // Save without leaving the page: the visible pages of the new version are
  // fetched first and swapped in at once, so nothing jumps and the focus
  // stays on the cell it was on.
  var saving = false;
  function save() {
    if (saving) { return; }
    if (editing) { finishEdit(true, save); return; }
    if (!isDirty()) { say("There are no unsaved edits."); return; }
    saving = true;
    setDisabled("save", true);
    var sent = JSON.stringify(pending);
    post(config.urls.save, requestBody()).then(function (result) {
      if (result.status !== 200) {
        saving = false;
        setDisabled("save", false);
        say(problemText(result.data), "error");
        return;
      }
      return redraw(result.data, sent);
    }).catch(function (error) {
      saving = false;
      setDisabled("save", false);
      say("The edits could not be saved (" + error.message + "); they are still here.", "error");
    });
  }

  function redraw(state, sent) {
    var range = visibleRange();
    var wanted = {};
    for (var position = range.first; position <= range.last; position++) {
      wanted[Math.floor(indexAt(position) / PAGE)] = true;
    }
    var numbers = Object.keys(wanted).map(Number);
    return Promise.all(numbers.map(function (number) {
      return fetch(config.urls.items + "?start=" + number * PAGE + "&count=" + PAGE, { credentials: "same-origin" })
        .then(function (r) { if (!r.ok) { throw new Error("HTTP " + r.status); } return r.json(); });
    })).then(function (answers) {
      pages = {};
      loading = {};
      answers.forEach(function (data, n) { pages[numbers[n]] = data.items; });
      config.version = state.version;
      flagged = state.flagged;
      // Edits made while the save was on its way stay unsaved.
      if (JSON.stringify(pending) === sent) { pending = emptyPending(); undoStack = []; redoStack = []; }
      var version = document.getElementById("job-version");
      if (version) { version.textContent = String(state.version); }
      document.querySelectorAll("input[name=version]").forEach(function (input) { input.value = state.version; });
      var summary = document.getElementById("flag-summary");
      if (summary && state.summary_html) { summary.innerHTML = state.summary_html; }
      saving = false;
      setDisabled("save", false);
      changed();
      focusActive();
      say(state.changed ? "Saved (version " + state.version + ")." : "Nothing to save: the items already hold these values.");
      if (view) { applyFilter(filterQuery()); }
    });
  }
  on("save", "click", save);

  var dialog = document.getElementById("approve-dialog");
  on("approve", "click", function approve() {
    if (editing) { finishEdit(true, approve); return; }
    post(config.urls.preview, requestBody()).then(function (result) {
      if (result.status !== 200) { say(problemText(result.data), "error"); return; }
      var s = result.data;
      var box = document.getElementById("approve-summary");
      box.textContent = "";
      [["To publish", s.publish], ["Omitted", s.omitted], ["Changed by hand", s.changed_by_hand],
       ["Flags still blocking", s.blocking]].forEach(function (pair) {
        var p = document.createElement("p");
        p.textContent = pair[0] + ": " + pair[1];
        box.appendChild(p);
      });
      if (s.blocking) {
        var list = document.createElement("ul");
        s.problems.forEach(function (problem) {
          var li = document.createElement("li");
          li.textContent = "item " + (problem.index + 1) + " " + (problem.field || "row") + ": " + problem.message;
          list.appendChild(li);
        });
        box.appendChild(list);
      }
      document.getElementById("approve-confirm").disabled = s.blocking > 0;
      dialog.showModal();
      document.getElementById(s.blocking ? "approve-cancel" : "approve-confirm").focus();
    });
  });
  on("approve-cancel", "click", function () { dialog.close(); focusActive(); });
  on("approve-confirm", "click", function () {
    setDisabled("approve-confirm", true);
    post(config.urls.approve, requestBody()).then(function (result) {
      if (result.status === 200) {
        leaving = true;
        window.location.assign(config.urls.next);
        return;
      }
      dialog.close();
      setDisabled("approve-confirm", false);
      say(problemText(result.data), "error");
      // The edits were saved with the refusal: the page shows them as stored.
      if (result.status === 422 && result.data.version) { pending = emptyPending(); reloadClean(); }
    });
  });

  window.addEventListener("beforeunload", function (event) {
    if (!leaving && isDirty()) { event.preventDefault(); event.returnValue = ""; }
  });
  var reject = document.getElementById("reject-form");
  if (reject) {
    reject.addEventListener("submit", function (event) {
      if (isDirty() && !window.confirm("Reject and drop the unsaved edits?")) { event.preventDefault(); return; }
      leaving = true;
    });
  }

  // --- start -------------------------------------------------------------
  render();
  var wanted = Number(new URLSearchParams(window.location.search).get("item"));
  if (wanted > 0 || (wanted === 0 && window.location.search.indexOf("item=") !== -1)) {
    goToFlaggedCell(Math.min(wanted, config.total - 1));
  } else if (flagged.length) {
    active = { row: flagged[0][0], col: 1 };
    viewport.scrollTop = Math.max(0, flagged[0][0] * ROW_HEIGHT - viewport.clientHeight / 2);
    render();
  }
  fetchPage(Math.floor(active.row / PAGE));
}());
