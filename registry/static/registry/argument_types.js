// Prompt arguments: show only the limits that matter for the chosen type.
// The form clears the hidden ones on save, so nothing hidden is ever kept.
(function () {
  "use strict";
  function update(select) {
    var row = select.closest("tr, .inline-related") || document;
    row.querySelectorAll("[data-bound-for]").forEach(function (input) {
      var types = input.getAttribute("data-bound-for").split(" ");
      var shown = types.indexOf(select.value || "text") !== -1;
      // The whole line (labels, inputs, help) goes, so no empty boxes stand in the form; the
      // inline groups the limits so that the fields on one line apply to the same types.
      var box = input.closest(".form-row") || input;
      box.style.display = shown ? "" : "none";
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
