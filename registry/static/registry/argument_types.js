// Prompt argument rows: show only the bound fields that matter for the chosen type.
// The form clears the hidden ones on save, so nothing hidden is ever kept.
(function () {
  "use strict";
  function update(select) {
    var row = select.closest("tr, .inline-related") || document;
    row.querySelectorAll("[data-bound-for]").forEach(function (input) {
      var types = input.getAttribute("data-bound-for").split(" ");
      var shown = types.indexOf(select.value || "text") !== -1;
      input.style.visibility = shown ? "" : "hidden";
      input.disabled = !shown;
    });
  }
  function updateAll() {
    document.querySelectorAll("select.registry-argument-type").forEach(update);
  }
  document.addEventListener("change", function (event) {
    if (event.target.matches && event.target.matches("select.registry-argument-type")) {
      update(event.target);
    }
  });
  document.addEventListener("formset:added", updateAll);
  document.addEventListener("DOMContentLoaded", updateAll);
})();
