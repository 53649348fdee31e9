// Live updates for the jobs list and the job page, and drag and drop for
// the upload form. Plain JS: the server renders every fragment, the page
// only swaps it in. Closing the tab stops the polling, never the job.
(function () {
  "use strict";

  var POLL_MS = 2000;

  function poll(region) {
    var url = region.getAttribute("data-live-url");
    var timer = null;

    function finished() {
      var root = region.querySelector("[data-live-root]");
      return root !== null && root.getAttribute("data-finished") === "true";
    }

    function syncCancelForm() {
      var root = region.querySelector("[data-live-root]");
      var form = document.getElementById("cancel-form");
      if (root && form) {
        form.hidden = root.getAttribute("data-cancellable") !== "true";
        // Cancel names the version on screen: a job that changed since is not cancelled blindly.
        if (form.elements.version) {
          form.elements.version.value = root.getAttribute("data-version");
        }
      }
    }

    function schedule() {
      if (timer === null && !finished()) {
        timer = window.setTimeout(tick, POLL_MS);
      }
    }

    function tick() {
      timer = null;
      if (document.hidden) {
        schedule();
        return;
      }
      fetch(url, { credentials: "same-origin", headers: { "Accept": "text/html" } })
        .then(function (response) {
          if (response.redirected || response.status === 401 || response.status === 403 ||
              response.status === 404) {
            // Signed out, or the job is gone: let the full page say so.
            window.location.reload();
            return null;
          }
          return response.ok ? response.text() : null;
        })
        .then(function (html) {
          if (html !== null && html !== undefined) {
            region.innerHTML = html;
            syncCancelForm();
          }
          schedule();
        })
        .catch(function () { schedule(); });
    }

    syncCancelForm();
    schedule();
    document.addEventListener("visibilitychange", function () {
      if (!document.hidden && timer === null && !finished()) {
        tick();
      }
    });
  }

  function dropzone(zone) {
    var input = zone.querySelector("input[type=file]");
    var label = zone.querySelector("[data-dropzone-label]");
    if (!input) {
      return;
    }
    function show() {
      if (label && input.files && input.files.length) {
        label.textContent = "Selected: " + input.files[0].name;
      }
    }
    ["dragenter", "dragover"].forEach(function (name) {
      zone.addEventListener(name, function (event) {
        event.preventDefault();
        zone.classList.add("over");
      });
    });
    ["dragleave", "drop"].forEach(function (name) {
      zone.addEventListener(name, function () { zone.classList.remove("over"); });
    });
    zone.addEventListener("drop", function (event) {
      event.preventDefault();
      if (event.dataTransfer && event.dataTransfer.files.length) {
        input.files = event.dataTransfer.files;
        show();
      }
    });
    input.addEventListener("change", show);
  }

  // A filter that applies as soon as it changes (no inline handlers: the
  // Content-Security-Policy allows scripts from static files only).
  function autosubmit(control) {
    control.addEventListener("change", function () { control.form.submit(); });
  }

  document.querySelectorAll("[data-live-url]").forEach(poll);
  document.querySelectorAll("[data-dropzone]").forEach(dropzone);
  document.querySelectorAll("[data-autosubmit]").forEach(autosubmit);

  // Cancel asks first, and says what it cannot stop.
  var cancelForm = document.getElementById("cancel-form");
  if (cancelForm && cancelForm.getAttribute("data-confirm")) {
    cancelForm.addEventListener("submit", function (event) {
      if (!window.confirm(cancelForm.getAttribute("data-confirm"))) { event.preventDefault(); }
    });
  }
})();
