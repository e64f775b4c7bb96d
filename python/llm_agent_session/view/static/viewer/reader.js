// A transcript's page, the wiring: the state started, the list's and the tool bar's events
// bound to the modules that act on them, the transcript's summary asked for, a deep link's
// place (?at=ID) gone to, and the follow started.
import { getJSON } from "./api.js";
import { $, el, status } from "./dom.js";
import { FOLLOW_MS, follow } from "./follow.js";
import { goToId, goToKind, goToTime } from "./jumps.js";
import { apiURL } from "./links.js";
import { jumpTo, onScroll, render, syncScrollbar, toEnd } from "./list.js";
import { setMode, showInfo } from "./modes.js";
import { nextHit, search } from "./search.js";
import { markSecrets, reveal } from "./secrets.js";
import { T, startState } from "./state.js";
import { key } from "./windows.js";

// `first`: the summary and first window asked for as the page started (viewer/early.js).
export function openReader(link, first) {
  $("shelf").remove();
  $("reader").hidden = false;
  startState(link);
  const params = new URLSearchParams(location.search);
  if (params.get("mode") === "live") { T.mode = "live"; $("mode-live").checked = true; }
  listenToTheList();
  listenToTheTools();
  start(params, first);
}

// The wheel, touch and keys (which move the list by pixels), the scrollbar, and the
// buttons inside envelopes.
function listenToTheList() {
  const items = $("items");
  window.addEventListener("wheel", () => { T.input = performance.now(); }, { passive: true, capture: true });
  window.addEventListener("touchmove", () => { T.input = performance.now(); }, { passive: true, capture: true });
  window.addEventListener("keydown", (e) => {
    if (e.target !== document.body) return;
    if (["PageDown", "PageUp", "ArrowDown", "ArrowUp", " "].includes(e.key)) T.input = performance.now();
    if (e.altKey || e.metaKey || e.shiftKey) return;
    // Home and End go to the list's ends, not to where the scrollbar's ends were when the
    // key was pressed (the bar's length changes as heights are measured on the way).
    if (e.key === "End") { e.preventDefault(); toEnd(); }
    if (e.key === "Home") { e.preventDefault(); jumpTo(0, false); }
  }, { capture: true });
  window.addEventListener("scroll", onScroll, { passive: true });
  window.addEventListener("resize", () => { render(); syncScrollbar(); });
  items.addEventListener("click", onEnvelopeButton);
  items.addEventListener("toggle", () => render(), true);
}

// A button inside an envelope: go to an id, fold or unfold it (or a run of checkpoints),
// show a shortened value whole, a folded text whole, or the raw lines (an envelope's, a card's).
async function onEnvelopeButton(e) {
  const b = e.target.closest("button");
  if (!b) return;
  if (b.dataset.to) { goToId(b.dataset.to); return; }
  const art = b.closest("article");
  if (b.dataset.reveal) {
    try { await reveal(b); } catch (err) { status(err.message); }
    render();
    return;
  }
  if (b.dataset.fold) {
    const i = Number(art.dataset.i), unfolded = !art.classList.contains("unfolded");
    T.folds.set(i, unfolded);
    if (art.classList.contains("part")) { art.remove(); T.nodes.delete(i); }   // drawn again, with its body
    else { art.classList.toggle("unfolded", unfolded); b.textContent = unfolded ? "fold" : "show"; }
    render();
    return;
  }
  if (b.dataset.run) {
    const start = Number(b.dataset.run), count = Number(b.dataset.count);
    const show = b.textContent === "show";
    T.folds.set(start, show);
    if (!show && T.target !== null && T.target >= start && T.target < start + count) T.target = null;   // folded by the reader
    for (let j = start; j < start + count; j++) { const node = T.nodes.get(j); if (node) { node.remove(); T.nodes.delete(j); } }
    render();
    return;
  }
  if (b.dataset.unclip) {
    const clipped = b.previousElementSibling.classList.toggle("clip");
    b.textContent = clipped ? b.dataset.unclip : "fold";
    render();
    return;
  }
  if (b.dataset.more) {
    const i = Number(b.dataset.more);
    const full = await getJSON(apiURL("envelope", { t: T.link, i, full: 1 }));
    T.cache.set(key(i), full);
    const node = T.nodes.get(i);
    if (node) { node.remove(); T.nodes.delete(i); }
    render();
    return;
  }
  if (b.dataset.raw) {
    const old = art.querySelector(":scope > .rawline");
    if (old) { old.remove(); render(); return; }
    const got = await getJSON(apiURL("envelope", { t: T.link, i: Number(b.dataset.raw), raw: 1 }));
    const line = el("pre", "code rawline", got.raw);
    markSecrets(line);
    art.append(line);
    render();
    return;
  }
  if (b.dataset.cardRaw) await cardRaw(b);
}

// A card's raw lines: the call's, its dispatch's, its result's and its settle's, as in the file.
async function cardRaw(b) {
  const box = b.closest(".card");
  const old = box.querySelector(":scope > .rawlines");
  if (old) { old.remove(); render(); return; }
  const lines = el("div", "rawlines");
  for (const [what, , i] of b.parts) {
    const got = await getJSON(apiURL("envelope", { t: T.link, i, raw: 1 }));
    const line = el("pre", "code rawline", got.raw);
    line.dataset.i = String(i);   // where its secrets are revealed from
    markSecrets(line);
    lines.append(el("div", "label", what + " · #" + i), line);
  }
  box.append(lines);
  render();
}

// The tool bar: modes, search, jumps, the ends.
function listenToTheTools() {
  const items = $("items");
  $("unfold").addEventListener("change", () => { items.classList.toggle("unfold-all", $("unfold").checked); render(); });
  $("mode-live").addEventListener("change", () => setMode($("mode-live").checked ? "live" : "history"));
  $("search").addEventListener("keydown", (e) => {
    if (e.key !== "Enter") return;
    e.preventDefault();
    if ($("search").value === T.query && T.hits.length) nextHit(e.shiftKey ? -1 : 1);
    else search();
  });
  $("search").addEventListener("search", () => { if (!$("search").value) search(); });
  $("search-case").addEventListener("change", () => { if (T.query) search(); });
  $("search-extras").addEventListener("change", () => { if (T.query) search(); });
  $("search-next").addEventListener("click", () => nextHit(1));
  $("search-prev").addEventListener("click", () => nextHit(-1));
  const go = () => {
    const id = $("jump-id").value.trim(), time = $("jump-time").value.trim();
    if (id) goToId(id); else if (time) goToTime(time);
  };
  $("jump-go").addEventListener("click", go);
  $("jump-id").addEventListener("keydown", (e) => { if (e.key === "Enter") goToId($("jump-id").value.trim()); });
  $("jump-time").addEventListener("keydown", (e) => { if (e.key === "Enter") goToTime($("jump-time").value.trim()); });
  $("kind-next").addEventListener("click", () => goToKind("forward"));
  $("kind-prev").addEventListener("click", () => goToKind("back"));
  $("to-start").addEventListener("click", () => jumpTo(0, false));
  $("to-end").addEventListener("click", toEnd);
}

function layout() {   // the list sits under the tool bars
  const top = $("bar").offsetHeight + $("tools").offsetHeight;
  $("layer").style.top = top + "px";
}

// The transcript's summary, the list at its start (or at ?at=ID), then the follow.
async function start(params, first) {
  layout();
  window.addEventListener("resize", layout);
  try {
    const info = await first.info;
    T.generation = info.generation;
    T.early = first.window;   // the window at the start, taken by the list's first fetch
    T.ready = info.ready;
    showInfo(info);
    setMode(T.mode);
    if (info.preview) toEnd();   // a big file without an index: its end, while it is read
    const at = params.get("at");
    if (at) await goToId(at);
    setTimeout(follow, FOLLOW_MS);
  } catch (e) {
    status(e.message);
  }
}
