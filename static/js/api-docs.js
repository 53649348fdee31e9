// Starts Swagger UI on the API reference page (an external file: the page's
// Content-Security-Policy allows no inline script).
(function () {
  "use strict";
  var root = document.getElementById("swagger-ui");
  window.SwaggerUIBundle({
    url: root.getAttribute("data-spec-url"),
    domNode: root,
    deepLinking: true,
    tryItOutEnabled: false,
    validatorUrl: null
  });
})();
