// Search over the whole file, by the server: /api/search streams the hits as JSON lines
// while it reads; the first hit is shown at once, Enter and Shift+Enter go to the next and
// previous, the count says how far the scan is.
import { api } from "./api.js";
import { $, fmtInt, status } from "./dom.js";
import { apiURL } from "./links.js";
import { jumpTo, render } from "./list.js";
import { setMode } from "./modes.js";
import { T } from "./state.js";

export async function search() {
  const q = $("search").value;
  if (T.searchAbort) T.searchAbort.abort();
  T.hits = []; T.hitSet = new Set(); T.hitAt = -1; T.hitTotal = 0; T.query = q; T.searchDone = false;
  refreshHits();
  if (!q) { T.searchDone = true; showCount(); return; }
  if (T.mode !== "history") setMode("history");
  const ctl = new AbortController();
  T.searchAbort = ctl;
  try {
    const r = await api(apiURL("search", { t: T.link, q, case: $("search-case").checked ? 1 : 0,
      extras: $("search-extras").checked ? 1 : 0 }), { signal: ctl.signal });
    if (!r.ok) { const b = await r.json().catch(() => ({})); throw new Error(b.error || r.statusText); }
    const reader = r.body.getReader(), dec = new TextDecoder();
    let buf = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += dec.decode(value, { stream: true });
      let nl;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const msg = JSON.parse(buf.slice(0, nl));
        buf = buf.slice(nl + 1);
        if (msg.wait) { setTimeout(search, 500); return; }
        for (const [i] of msg.hits || []) { T.hits.push(i); T.hitSet.add(i); }
        T.hitTotal = msg.total;
        if (msg.done) T.searchDone = true;
        if (T.hitAt < 0 && T.hits.length) { T.hitAt = 0; jumpTo(T.hits[0], false); }
        else if (msg.hits && msg.hits.length) refreshHits();
        showCount(msg);
      }
    }
  } catch (e) { if (e.name !== "AbortError") status("search: " + e.message); }
}

function showCount(msg) {
  const n = T.hitTotal;
  let text = "";
  if (T.query) {
    if (!n && T.searchDone) text = "no hits";
    else text = (T.hitAt + 1) + " of " + (T.searchDone ? "" : "≥ ") + fmtInt(n);
    if (!T.searchDone && msg && msg.size) text += " (" + Math.floor((msg.scanned / msg.size) * 100) + "%)";
  }
  $("search-count").textContent = text;
}

function refreshHits() {   // redraw the envelopes shown, with their hit marks
  for (const [i, node] of T.nodes) { node.remove(); T.nodes.delete(i); }
  render();
}

export function nextHit(step) {
  if (!T.hits.length) return;
  T.hitAt = (T.hitAt + step + T.hits.length) % T.hits.length;
  jumpTo(T.hits[T.hitAt], false);
  refreshHits();
  showCount();
}
