// The notes tab: the session's note, versioned.
import { section } from "../dom.js";
import { noteEditor } from "../notes.js";

export async function render(body, sid) {
  const note = noteEditor(sid, "session");
  body.append(section("Session note", note.box));
  await note.load();
}
