// The operations dashboard reloads itself every few seconds, unless the
// reader pauses it (a meta refresh could not be paused).
(function () {
  "use strict";
  var button = document.getElementById("refresh-toggle");
  if (!button) { return; }
  var seconds = Number(button.getAttribute("data-seconds")) || 30;
  var timer = null;
  function start() { timer = window.setTimeout(function () { window.location.reload(); }, seconds * 1000); }
  button.addEventListener("click", function () {
    var paused = timer === null;
    if (paused) { start(); } else { window.clearTimeout(timer); timer = null; }
    button.setAttribute("aria-pressed", paused ? "false" : "true");
    button.textContent = paused ? "Pause refreshing" : "Resume refreshing";
  });
  start();
}());
