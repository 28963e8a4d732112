// Asks before a consequential submit: a button with data-registry-confirm="question" submits only
// when the user confirms. A static file (no inline handler), so the admin's Content-Security-Policy
// needs no 'unsafe-inline'; the question comes from an auto-escaped attribute, never from code.
"use strict";
document.addEventListener("click", function (event) {
  const button = event.target.closest("[data-registry-confirm]");
  if (button && !window.confirm(button.getAttribute("data-registry-confirm"))) {
    event.preventDefault();
  }
});
