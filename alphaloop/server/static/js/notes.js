// A note on a session or one of its trials: saved as a new version of the one read; an edit
// made meanwhile elsewhere is a 409, and the note is reloaded with this edit below it.
import { api } from "./api.js";
import { el } from "./dom.js";
import { when } from "./format.js";

export function noteEditor(sid, which, trialId = null) {
  const area = el("textarea", { id: `${which}-note`, rows: 4, "aria-label": `${which} note`, maxlength: 20000 });
  const version = el("span", { class: "muted", id: `${which}-note-version` });
  const save = el("button", { type: "button", id: `${which}-note-save` }, "Save note");
  const url = `/api/sessions/${sid}/notes` + (trialId ? `?trial_id=${trialId}` : "");
  let base = 0;
  const load = async () => {
    const n = await api(url);
    base = n.version; area.value = n.text;
    version.textContent = n.version ? `version ${n.version}, ${when(n.history[n.history.length - 1].created_at)}` : "no note yet";
  };
  save.addEventListener("click", async () => {
    const body = { text: area.value, base_version: base };
    if (trialId) body.trial_id = trialId;
    try {
      const n = await api(`/api/sessions/${sid}/notes`, { method: "PUT", body: JSON.stringify(body) });
      base = n.version; version.textContent = `saved as version ${n.version}`;
    } catch (e) {
      const mine = area.value;
      await load();
      version.textContent += ` (reloaded: it was edited meanwhile; your edit is appended below)`;
      area.value = area.value + "\n--- your edit ---\n" + mine;
    }
  });
  const box = el("div", { class: "note", dataset: { note: which } }, el("label", { class: "grow" }, `${which} note`, area), el("div", { class: "row" }, save, version));
  return { box, load };
}
