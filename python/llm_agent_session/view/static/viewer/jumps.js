// Jumps: to an envelope id (a deep link's ?at=ID too), to a time, and to the next or
// previous tool call, failed or pending call, compaction or rewind, as /api/locate finds
// them, each answer with the window that holds the envelope (one round trip, not two);
// the envelope jumped to is marked as the target.
import { getJSON } from "./api.js";
import { $, status } from "./dom.js";
import { apiURL } from "./links.js";
import { jumpTo } from "./list.js";
import { setMode } from "./modes.js";
import { T } from "./state.js";
import { WINDOW, takeWindow } from "./windows.js";

export async function goToId(id) {
  try {
    const got = await getJSON(apiURL("locate", { t: T.link, id, window: WINDOW }));
    if (got.wait) { status("still reading the index…"); await new Promise((r) => setTimeout(r, 250)); return goToId(id); }
    if (got.i === null) { status("no envelope " + id + " in this transcript" + (T.ready.history ? "" : " (or the index is still being read)")); return false; }
    if (T.mode !== "history") setMode("history");
    takeWindow(got.window);
    jumpTo(got.i, true);
    status(T.about);
    return true;
  } catch (e) { status(e.message); return false; }
}

export async function goToTime(text) {
  try {
    const got = await getJSON(apiURL("locate", { t: T.link, time: text, window: WINDOW }));
    if (got.wait) { status("still reading the index…"); setTimeout(() => goToTime(text), 500); return; }
    if (got.i === null) { status("nothing at or after " + text); return; }
    if (T.mode !== "history") setMode("history");
    takeWindow(got.window);
    jumpTo(got.i, true);
    status("the first envelope in file order at or after " + text);
  } catch (e) { status(e.message); }
}

export async function goToKind(dir) {
  const kind = $("jump-kind").value;
  if (T.mode !== "history") setMode("history");
  // From the envelope at the top of the screen: the next at or after it, or after it
  // where it is the last jump's target (still where the jump put it); the previous before it.
  const here = T.anchor.index, onTarget = T.target === here && T.anchor.offset === 0;
  const from = dir === "back" || onTarget ? here : here - 1;
  try {
    const got = await getJSON(apiURL("locate", { t: T.link, kind, from, dir, window: WINDOW }));
    if (got.wait) { status("still reading the history…"); return; }
    if (got.i === null) { status("no " + $("jump-kind").selectedOptions[0].text + (dir === "back" ? " before" : " after") + " this"); return; }
    takeWindow(got.window);
    jumpTo(got.i, true);
    status(T.about);
  } catch (e) { status(e.message); }
}
