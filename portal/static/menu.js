// On a phone the site's menu folds behind a button; without JavaScript it stays open (wrapped).
document.addEventListener("DOMContentLoaded", () => {
  const button = document.querySelector(".menu-toggle");
  if (!button) return;
  button.hidden = false;
  document.documentElement.classList.add("menu-folds");
  button.addEventListener("click", () => {
    const open = button.getAttribute("aria-expanded") === "true";
    button.setAttribute("aria-expanded", String(!open));
  });
});
