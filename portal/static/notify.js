// The browser's own notifications while a portal page is open (the Web Notifications API).
// Permission is asked for only on a click; the header's count (refreshed by htmx) says when
// there are new ones, which are then claimed from the portal, so each shows once, in one tab.
(function () {
  "use strict";
  if (!("Notification" in window)) return;

  function csrfToken() {
    try {
      return JSON.parse(document.body.getAttribute("hx-headers"))["X-CSRFToken"];
    } catch (error) {
      return "";
    }
  }

  function show(item) {
    const shown = new Notification(item.title, { body: item.body, tag: "portal-" + item.id });
    shown.onclick = function () {
      window.focus();
      window.location.href = item.url;
      shown.close();
    };
  }

  let asking = false;
  function fetchNew(link) {
    if (asking || Notification.permission !== "granted" || link.dataset.unpushed !== "1") return;
    asking = true;
    fetch(link.dataset.pushUrl, {
      method: "POST",
      headers: { "X-CSRFToken": csrfToken() },
      credentials: "same-origin",
    })
      .then((answer) => (answer.ok ? answer.json() : { notifications: [] }))
      .then((data) => data.notifications.forEach(show))
      .catch(() => {})
      .finally(() => {
        asking = false;
      });
  }

  function offerPermission() {
    const button = document.getElementById("notify-permission");
    if (!button || Notification.permission !== "default") return;
    button.hidden = false;
    button.addEventListener("click", function () {
      Notification.requestPermission().then(function () {
        button.hidden = Notification.permission !== "default";
      });
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    offerPermission();
    htmx.onLoad(function (element) {
      if (element.id === "notify-count") fetchNew(element);
    });
  });
})();
