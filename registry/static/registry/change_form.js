/* Change pages of registry entries: warn before leaving with unsaved edits, and preview the edits
   in the page without saving them. Without JavaScript the Preview button still works: it submits
   the form to the preview page in a new tab, and the edits stay in this one. */
(function () {
  "use strict";

  function ready(fn) {
    if (document.readyState !== "loading") { fn(); } else { document.addEventListener("DOMContentLoaded", fn); }
  }

  /* Which fieldsets of a prompt message matter for each content kind. */
  var KIND_FIELDSETS = {
    "text": [],
    "image": ["registry-kind-file"],
    "audio": ["registry-kind-file"],
    "resource": ["registry-kind-file", "registry-kind-uri"],
    "resource_link": ["registry-kind-uri"]
  };

  function showFieldsetsFor(select) {
    var message = select.closest(".inline-related");
    if (!message) { return; }
    var wanted = KIND_FIELDSETS[select.value] || ["registry-kind-file", "registry-kind-uri"];
    ["registry-kind-file", "registry-kind-uri"].forEach(function (cls) {
      message.querySelectorAll("fieldset." + cls).forEach(function (fieldset) {
        // A fieldset holding an error stays visible, so no problem is hidden from the editor.
        var keep = wanted.indexOf(cls) !== -1 || fieldset.querySelector(".errorlist");
        fieldset.hidden = !keep;
      });
    });
  }

  function kindSelects(root) {
    return root.querySelectorAll("select[name$='-kind']");
  }

  /* Bring an error's field (or its row) into view and put the keyboard on it. A hidden
     fieldset or a closed <details> around it is opened first. */
  function goTo(target) {
    var details = target.closest("details");
    if (details && !details.open) { details.open = true; }
    var focusable = target.matches("input, select, textarea, button, a[href]") ? target
      : target.querySelector("input:not([type=hidden]), select, textarea");
    if (!focusable) {
      focusable = target;
      if (!target.hasAttribute("tabindex")) { target.setAttribute("tabindex", "-1"); }
    }
    target.scrollIntoView({block: "center"});
    focusable.focus({preventScroll: true});
  }

  /* "Add another …" puts the keyboard on the new row's first field: without it the new field is
     dozens of Tab presses away (the rest of the form comes first). The position number ahead of
     it (the rows' order, filled in on save) is skipped: the editor starts with the name or role. */
  function focusFirstField(row) {
    if (!row || !row.querySelectorAll) { return; }
    var fields = row.querySelectorAll("input:not([type=hidden]), select, textarea");
    for (var i = 0; i < fields.length; i++) {
      var field = fields[i];
      if (/-position$/.test(field.name || "")) { continue; }
      if (!field.disabled && field.offsetParent !== null) {
        field.scrollIntoView({block: "center"});
        field.focus({preventScroll: true});
        return;
      }
    }
  }

  function errorSummary() {
    var summary = document.querySelector("[data-registry-error-summary]");
    if (!summary) { return; }
    summary.addEventListener("click", function (event) {
      var link = event.target.closest("a[href^='#']");
      var target = link && document.getElementById(link.getAttribute("href").slice(1));
      if (!target) { return; }
      event.preventDefault();
      goTo(target);
      if (history.replaceState) { history.replaceState(null, "", link.getAttribute("href")); }
    });
    var first = summary.querySelector("a[href^='#']");
    var target = first && document.getElementById(first.getAttribute("href").slice(1));
    if (target) { goTo(target); }
  }

  ready(function () {
    kindSelects(document).forEach(showFieldsetsFor);
    errorSummary();
    document.addEventListener("change", function (event) {
      if (event.target.matches && event.target.matches("select[name$='-kind']")) { showFieldsetsFor(event.target); }
    });
    document.addEventListener("formset:added", function (event) {
      kindSelects(event.target).forEach(showFieldsetsFor);
      focusFirstField(event.target);
    });

    var panel = document.querySelector("[data-registry-preview]");
    var form = panel ? panel.closest("form") : document.querySelector("#content-main form[method='post']");
    if (!form) { return; }

    var dirty = false;
    function markDirty(event) {
      // Sample argument values of the preview are not edits of the entry.
      if (panel && panel.contains(event.target)) { return; }
      dirty = true;
      form.setAttribute("data-registry-dirty", "1");
    }
    form.addEventListener("input", markDirty);
    form.addEventListener("change", markDirty);
    form.addEventListener("submit", function () { dirty = false; });
    window.addEventListener("beforeunload", function (event) {
      if (!dirty) { return undefined; }
      event.preventDefault();
      event.returnValue = "";
      return "";
    });

    if (!panel) { return; }
    var output = panel.querySelector("[data-registry-preview-output]");
    /* With unsaved edits, "Preview saved draft" would leave the page (asking "Leave site?") to show
       the old text: preview the edits here instead, which is what the editor wants to see. */
    document.querySelectorAll("[data-registry-preview-saved]").forEach(function (link) {
      link.addEventListener("click", function (event) {
        if (!dirty) { return; }
        event.preventDefault();
        var details = link.closest("details");
        if (details) { details.open = false; }
        var button = panel.querySelector("[data-registry-preview-button]");
        panel.scrollIntoView({block: "start"});
        if (button) { button.click(); }
      });
    });
    panel.addEventListener("click", function (event) {
      var button = event.target.closest("[data-registry-preview-button]");
      if (!button) { return; }
      event.preventDefault();
      button.disabled = true;
      output.setAttribute("aria-busy", "true");
      fetch(button.getAttribute("formaction"), {
        method: "POST",
        body: new FormData(form),
        credentials: "same-origin",
        headers: {"X-Registry-Fragment": "1"}
      }).then(function (response) {
        return response.text().then(function (text) {
          if (!response.ok) {
            /* The sentence comes translated from the page (data-registry-preview-failed). */
            var failed = panel.getAttribute("data-registry-preview-failed") || "The preview failed (HTTP {status}).";
            throw new Error(failed.replace("{status}", response.status));
          }
          return text;
        });
      }).then(function (html) {
        output.innerHTML = html;
      }).catch(function (error) {
        output.textContent = error.message;
      }).finally(function () {
        button.disabled = false;
        output.removeAttribute("aria-busy");
      });
    });
  });
})();
