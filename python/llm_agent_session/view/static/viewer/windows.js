// The window cache: envelopes as /api/window renders them, fetched WINDOW at a time (one
// request a window at once), kept KEEP on either side of the place shown, and marked stale
// when the follow says they changed (new badges): shown until fetched again.
import { getJSON } from "./api.js";
import { status } from "./dom.js";
import { apiURL } from "./links.js";
import { T } from "./state.js";

export const WINDOW = 24;     // envelopes a fetch asks for
export const KEEP = 600;      // envelopes kept in the cache around the place shown

export function key(i) { return T.mode + ":" + i; }

// The window holding envelope i; once it is in, `redraw()` (and `resize()` first, when
// the live conversation's length changed).
export function fetchWindow(i, redraw, resize) {
  const start = Math.max(0, Math.floor(i / WINDOW) * WINDOW);
  const k = T.mode + ":" + T.generation + ":" + start;
  if (T.loading.has(k)) return;
  T.loading.add(k);
  const mode = T.mode, gen = T.generation;
  // The window asked for as the page started (viewer/early.js), if it is this one.
  const early = T.early && T.early.mode === mode && T.early.start === start ? T.early.got : null;
  if (early) T.early = null;
  (early || getJSON(apiURL("window", { t: T.link, from: start, count: WINDOW, mode })))
    .then((got) => {
      if (mode !== T.mode || gen !== T.generation) return;
      if (early && got.generation !== undefined && got.generation !== gen) { T.loading.delete(k); redraw(); return; }   // the file changed since: asked again
      if (mode === "live" && !got.ready) { status("computing the live conversation…"); setTimeout(() => { T.loading.delete(k); redraw(); }, 500); return; }
      keep(got.items, got.history);
      if (got.count !== null && got.count !== undefined && got.count !== T.count && mode === "live") { T.count = got.count; resize(); }
      T.loading.delete(k);
      redraw();
    })
    .catch((e) => { T.loading.delete(k); status(e.message); });
}

// `history` false: made before the history was read (no badges of what removed, elided or
// settled them). Where the page already knows it is read (the summary, asked beside the
// first window, or the follow saying so while this was on its way), asked for again: else
// they kept no badge for good.
function keep(items, history) {
  const again = history === false && T.ready.history && T.mode === "history";
  for (const item of items) {
    T.cache.set(key(item.i), item);
    if (again) T.stale.add(item.i); else T.stale.delete(item.i);
  }
}

// A window that came with another answer (/api/locate's, a jump's): taken as fetched.
export function takeWindow(got) {
  if (!got || T.mode !== "history" || got.generation !== T.generation) return;
  keep(got.items, got.history);
}

export function trimCache() {
  if (T.cache.size <= KEEP * 2) return;
  const a = T.anchor.index;
  for (const k of T.cache.keys()) {
    const i = Number(k.slice(k.indexOf(":") + 1));
    if (Math.abs(i - a) > KEEP) T.cache.delete(k);
  }
}

export function forget(from) {   // fetch again what was fetched from `from` on (new badges); shown until then
  for (const k of T.cache.keys()) { const i = Number(k.slice(k.indexOf(":") + 1)); if (i >= from) T.stale.add(i); }
  T.loading.clear();
}
