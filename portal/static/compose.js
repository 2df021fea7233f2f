// The composer's script editor. Live updates (htmx) bring a fresh script in #fresh-script; it
// replaces the editor's text unless the user has edited that text by hand. Deciding at swap time,
// not at request time, means a response already on its way cannot overwrite an edit.
document.addEventListener("htmx:afterSwap", () => {
  // The lists of the cluster's GPU types and node types, as the live update brings them.
  for (const fresh of document.querySelectorAll("#panel template.fresh-choices")) {
    const select = document.querySelector(`.compose-fields select[name="${fresh.dataset.name}"]`);
    if (!select) continue;
    const chosen = select.value;
    select.replaceChildren(fresh.content.cloneNode(true));
    const options = [...select.options].map((option) => option.value);
    select.value = options.includes(chosen) ? chosen : "";
  }
  const fresh = document.getElementById("fresh-script");
  const editor = document.getElementById("script-editor");
  const text = document.getElementById("script-text");
  if (!fresh || !editor || !text) return;
  const script = fresh.content.textContent;
  if (text.dataset.edited === "true") return;
  text.value = script;
  editor.hidden = script === "";
});

document.addEventListener("input", (event) => {
  if (event.target.id !== "script-text") return;
  event.target.dataset.edited = "true";
  document.getElementById("edited-notice").hidden = false;
});

// The fields the user has been to, sent with each live update: its errors speak of those only,
// not of the fields still empty further down. Saving or submitting shows every error. Typing in
// a field counts (the update it starts must know), and so does leaving one.
function markReached(event) {
  const reached = document.getElementById("reached");
  const name = event.target.name;
  if (!reached || !name || !event.target.closest(".compose-fields")) return;
  const names = new Set(reached.value.split(",").filter(Boolean));
  names.add(name);
  reached.value = [...names].join(",");
}
document.addEventListener("input", markReached);
document.addEventListener("focusout", markReached);

// Another cluster has other GPU types and node types: a choice made for the last one is dropped
// before the live update asks (capture: ahead of htmx's own listener), and the lists come back
// with the new cluster's.
document.addEventListener(
  "change",
  (event) => {
    if (event.target.name !== "cluster" || !event.target.closest(".compose-fields")) return;
    for (const name of ["gpu_type", "partition"]) {
      const select = document.querySelector(`.compose-fields select[name=${name}]`);
      if (select) select.value = "";
    }
  },
  true,
);

// Enter in a field updates the advice where the user is, as a change would, rather than pressing
// the form's first button (without JavaScript, a hidden "Update" button is that first button).
document.addEventListener("keydown", (event) => {
  if (event.key !== "Enter" || event.isComposing) return;
  const field = event.target;
  const fields = field.closest(".compose-fields");
  if (!fields || field.tagName === "TEXTAREA" || field.type === "submit") return;
  event.preventDefault();
  htmx.trigger(fields, "change");
});

// A cluster with another scheduler (Run:ai) asks none of what only a Slurm script needs: the
// live update says which scheduler the chosen cluster has, and the form shows its questions.
function followScheduler() {
  const told = document.getElementById("scheduler");
  const fields = document.querySelector(".compose-fields");
  if (told && fields) fields.dataset.scheduler = told.dataset.scheduler;
}
document.addEventListener("htmx:afterSwap", followScheduler);
document.addEventListener("htmx:oobAfterSwap", followScheduler);

// The site templates start on the cluster chosen now, not the one the page was opened with.
document.addEventListener("change", (event) => {
  if (event.target.name !== "cluster" || !event.target.closest(".compose-fields")) return;
  for (const link of document.querySelectorAll(".templates a[href*='template=']")) {
    const url = new URL(link.href);
    url.searchParams.set("on", event.target.value);
    link.href = url.pathname + url.search;
  }
});

// "Save as" offers the job's name, and follows it as the job is renamed, until the user types a
// name of their own there.
document.addEventListener("input", (event) => {
  const saveAs = document.getElementById("composition-name");
  if (!saveAs) return;
  if (event.target === saveAs) {
    saveAs.dataset.typed = "true";
  } else if (event.target.name === "job_name" && saveAs.dataset.typed !== "true") {
    saveAs.value = event.target.value;
  }
});
