// The virtual list: the envelopes around the place shown (at most MAX_RENDERED elements),
// placed by their measured heights under a spacer as tall as the whole file would be. The
// document's scrollbar spans the whole file: dragging it maps its position to an envelope;
// the wheel and the keys move the list by pixels through the envelopes' measured heights
// (each with the gap above it), and the scrollbar is set to match when scrolling stops. At
// the end (T.atEnd) the last envelope stays in view.
import { remember } from "./address.js";
import { $ } from "./dom.js";
import { envelopeNode } from "./draw.js";
import { T } from "./state.js";
import { KEEP, fetchWindow, key, trimCache } from "./windows.js";

const MAX_HEIGHT = 8000000;   // the spacer's largest height (browsers stop near 16-33M px)
const MAX_RENDERED = 200;     // envelope elements in the page at any time
const END_GAP = 8;            // below the last envelope at the end (px)

const items = $("items"), layer = $("layer"), spacer = $("spacer");

function height(i) { return T.heights.has(i) ? T.heights.get(i) : T.avg; }
function viewHeight() { return layer.clientHeight || window.innerHeight; }
function maxScroll() { return Math.max(0, document.documentElement.scrollHeight - window.innerHeight); }
// The reader moved the scrollbar and its scroll event is still to come (with the next frame).
function scrollPending() { return T.suppress === null && Math.abs(window.scrollY - T.lastY) >= 1; }
export function sizeSpacer() {
  const total = Math.min(MAX_HEIGHT, Math.max(T.count * T.avg, 0));
  spacer.style.height = Math.max(total, 1) + "px";
}

export function render() {
  // Which envelopes to draw depends on their heights, known once drawn: draw again with
  // the heights a pass measured where they were off (a second pass, as a rule).
  for (let pass = 0; pass < 4; pass++) if (renderPass(pass === 3)) break;
  if (T.unremembered && T.cache.has(key(T.anchor.index))) remember();
}
function renderPass(final) {   // false: to be drawn again, with the heights measured
  const vh = viewHeight();
  if (T.count === 0) { items.replaceChildren(); T.nodes.clear(); return true; }
  if (T.atEnd) placeAtEnd(vh);
  const a = Math.min(Math.max(T.anchor.index, 0), T.count - 1);
  T.anchor.index = a;
  // Which envelopes: some above the anchor, and enough below it to fill the view twice.
  let first = a, above = 0;
  while (first > 0 && above < vh && a - first < 40) { first--; above += height(first); }
  let last = a, below = -T.anchor.offset;
  while (last < T.count - 1 && below < vh * 2 && last - first < MAX_RENDERED - 1) { below += height(last); last++; }
  for (const [i, node] of T.nodes) if (i < first || i > last) { node.remove(); T.nodes.delete(i); }
  let prev = null;
  for (let i = first; i <= last; i++) {
    let node = T.nodes.get(i);
    const item = T.cache.get(key(i));
    if (node && node.item !== item) { node.remove(); node = null; }
    if (!node) {
      node = envelopeNode(i);
      node.item = item;
      T.nodes.set(i, node);
    }
    if (!item || T.stale.has(i)) fetchWindow(i, render, sizeSpacer);
    if (prev === null ? items.firstChild !== node : prev.nextSibling !== node) {
      if (prev === null) items.prepend(node); else prev.after(node);
    }
    prev = node;
  }
  // Measure. An envelope's height is its slot: from the bottom of the one before (the
  // top of the list for the first) to its own bottom, so the gap above it (its margin)
  // counts; measured by position, in fractional pixels, so the sum is the list's height.
  const origin = items.getBoundingClientRect().top;
  const starts = new Map();
  let y = 0, measured = 0, sum = 0;
  for (let i = first; i <= last; i++) {
    const node = T.nodes.get(i);
    const bottom = node.getBoundingClientRect().bottom - origin;
    starts.set(i, y);
    if (!node.classList.contains("loading")) { T.heights.set(i, bottom - y); measured++; sum += bottom - y; }
    y = bottom;
  }
  if (T.atEnd) {
    // The last envelope's bottom END_GAP above the view's bottom, by what was measured.
    const top = y + END_GAP - vh;
    if (!final && (last < T.count - 1 || (top < 0 && first > 0))) return false;
    let i = first;
    while (i < last && starts.get(i + 1) <= top) i++;
    T.anchor = { index: i, offset: Math.max(0, top - starts.get(i)) };
  } else if (!final && last < T.count - 1 && y - starts.get(a) - T.anchor.offset < vh) {
    return false;   // estimated too tall: the envelopes drawn end above the view's bottom
  }
  if (measured > 5) {
    const avg = Math.max(40, Math.round(sum / measured));
    if (Math.abs(avg - T.avg) > T.avg * 0.25) {
      // A new spacer height moves (and may clamp) the scrollbar: set it for the place shown.
      // But not under a scroll still to be handled: that place is read on the spacer it
      // was made on (resized then, in onScroll), else it lands elsewhere, or is undone.
      if (scrollPending()) T.avgLater = avg;
      else { T.avg = avg; sizeSpacer(); syncScrollbar(); }
    }
  }
  items.style.transform = "translateY(" + (-(starts.get(T.anchor.index) + T.anchor.offset)) + "px)";
  trimCache();
  if (T.heights.size > KEEP * 4) {
    for (const i of T.heights.keys()) if (Math.abs(i - T.anchor.index) > KEEP) T.heights.delete(i);
  }
  return true;
}
function placeAtEnd(vh) {
  // The last envelope's bottom END_GAP above the view's bottom, by the heights known.
  let i = T.count - 1, need = vh - END_GAP;
  while (i > 0 && need > height(i)) { need -= height(i); i--; }
  T.anchor = { index: i, offset: Math.max(0, height(i) - need) };
}
function atBottom() {
  let h = -T.anchor.offset;
  for (let i = T.anchor.index; i < T.count && h <= viewHeight(); i++) h += height(i);
  return h <= viewHeight() + 1;
}
function moveBy(d) {
  let { index, offset } = T.anchor;
  offset += d;
  while (offset >= height(index) && index < T.count - 1) { offset -= height(index); index++; }
  while (offset < 0 && index > 0) { index--; offset += height(index); }
  if (index === 0 && offset < 0) offset = 0;
  T.anchor = { index, offset };
  T.atEnd = d > 0 && atBottom();
}
export function syncScrollbar() {
  const R = maxScroll();
  let y;
  if (T.atEnd) y = R;
  else if (T.anchor.index === 0 && T.anchor.offset === 0) y = 0;
  else y = Math.round(((T.anchor.index + T.anchor.offset / height(T.anchor.index)) / Math.max(T.count, 1)) * R);
  y = Math.min(Math.max(y, T.anchor.index > 0 ? 1 : 0), T.atEnd ? R : Math.max(R - 1, 0));
  if (Math.abs(y - window.scrollY) >= 1) {
    T.suppress = y;
    window.scrollTo(0, y);
  }
  T.lastY = y;
  remember();
}
export function onScroll() {
  const y = window.scrollY, d = y - T.lastY;
  T.lastY = y;
  if (T.suppress !== null && Math.abs(y - T.suppress) < 2) { T.suppress = null; return; }
  T.suppress = null;
  const R = maxScroll();
  const byInput = performance.now() - T.input < 300;
  if (y <= 0) { T.anchor = { index: 0, offset: 0 }; T.atEnd = false; }
  else if (y >= R - 1) { T.atEnd = true; }
  else if (byInput && Math.abs(d) < viewHeight() * 3) moveBy(d);
  else { T.atEnd = false; T.anchor = { index: Math.min(T.count - 1, Math.floor((y / R) * T.count)), offset: 0 }; }
  const resized = T.avgLater !== null;   // measured while this scroll waited: the spacer now
  if (resized) { T.avg = T.avgLater; T.avgLater = null; sizeSpacer(); }
  render();
  clearTimeout(T.idle);
  // At an edge of the scrollbar with more beyond it, or on a new spacer: set the bar now.
  if (resized || (y <= 0 && T.anchor.index > 0) || (y >= R - 1 && !T.atEnd)) syncScrollbar();
  else T.idle = setTimeout(() => { if (!scrollPending()) syncScrollbar(); }, 200);
}
export function jumpTo(i, mark) {
  if (i === null || i === undefined || i < 0) return;
  T.atEnd = false;
  T.anchor = { index: Math.min(i, Math.max(T.count - 1, 0)), offset: 0 };
  const before = T.target;
  T.target = mark ? i : null;
  // Drawn again: the target's node and the last one's, and every node of a folded run of
  // checkpoints either is in (a jump into a run unfolds it; one out of it folds it again).
  const inRun = (node, k) => node.run && k !== null && k >= node.run.start && k < node.run.start + node.run.count;
  for (const [j, node] of T.nodes) {
    if (j === i || node.classList.contains("target") || inRun(node, i) || inRun(node, before)) { node.remove(); T.nodes.delete(j); }
  }
  render();
  syncScrollbar();
}
export function toEnd() { T.atEnd = true; render(); syncScrollbar(); }
