// Drawing one envelope: the element for envelope i from the window cache (a placeholder
// until fetched), its badges and blocks, folded when a compaction or rewind took it out,
// and marked where the search hit it. Text is set as text; only the server's Markdown is
// set as HTML.
import { $, el, fmtInt } from "./dom.js";
import { markSecrets } from "./secrets.js";
import { T } from "./state.js";
import { key } from "./windows.js";

function badge(b) {
  const e = el(b.to ? "button" : "span", "badge " + (b.cls || ""), b.text);
  if (b.to) { e.type = "button"; e.dataset.to = b.to; e.title = "go to " + b.to; }
  return e;
}

function block(b, item) {
  if (b.md !== undefined) {
    const d = el("div", "md");
    d.innerHTML = b.md;   // made by the server without any markup from the transcript
    return d;
  }
  if (b.text !== undefined || b.code !== undefined) {
    const wrap = el("div", "block");
    if (b.label) wrap.append(el("div", "label", b.label));
    wrap.append(el(b.code !== undefined ? "pre" : "div", b.code !== undefined ? "code" : "text", b.code !== undefined ? b.code : b.text));
    return wrap;
  }
  if (b.kv) {
    const t = el("dl", "kv");
    for (const [k, v] of b.kv) t.append(el("dt", "", k), el("dd", "", v));
    return t;
  }
  if (b.link !== undefined) {
    const e = el("button", "badge link", b.link);
    e.type = "button"; e.dataset.to = b.to;
    return e;
  }
  if (b.call) {
    const c = el("div", "call");
    const head = el("div", "call-head");
    head.append(el("span", "call-name", "→ " + b.call.name + "(…)"));
    if (b.call.id) head.append(el("span", "dim", b.call.id));
    for (const x of b.call.badges || []) head.append(badge(x));
    c.append(head, el("pre", "code", b.call.arguments));
    if (b.call.more) c.append(moreButton(item, b.call.more));
    return c;
  }
  if (b.more) return moreButton(item, b.more);
  return el("div", "block", "");
}

function moreButton(item, n) {
  const e = el("button", "more", "shortened: show all " + fmtInt(n) + " characters");
  e.type = "button"; e.dataset.more = String(item.i);
  return e;
}

export function envelopeNode(i) {
  const item = T.cache.get(key(i));
  if (!item) {
    const p = el("article", "env loading", "…");
    p.dataset.i = String(i);
    return p;
  }
  const removed = (item.badges || []).some((b) => b.cls === "removed");
  const a = el("article", "env " + (item.cls || "") + (removed ? " removed" : ""));
  a.dataset.envelopeId = item.id;
  a.dataset.i = String(i);
  const head = el("div", "head");
  head.append(el("span", "title", item.title || item.type));
  for (const b of item.badges || []) head.append(badge(b));
  const meta = el("span", "meta", (item.ts ? item.ts.replace("T", " ").replace("Z", "") + " · " : "") +
    (T.mode === "live" ? "live #" : "#") + fmtInt(i));
  meta.title = item.id;
  head.append(meta);
  if (T.mode === "history") {
    const raw = el("button", "raw", "raw");
    raw.type = "button"; raw.dataset.raw = String(i); raw.title = "the line as it is in the file";
    head.append(raw);
  }
  a.append(head);
  if (removed) {
    // Folded unless the reader unfolded it, or it holds a search hit (until folded again).
    const unfolded = T.folds.has(i) ? T.folds.get(i) : T.hitSet.has(i) && T.mode === "history";
    if (unfolded) a.classList.add("unfolded");
    const fold = el("button", "fold", unfolded ? "fold" : "show");
    fold.type = "button"; fold.dataset.fold = "1";
    head.append(fold);
    if (item.preview) a.append(el("div", "preview", item.preview));
  }
  const body = el("div", "body");
  for (const b of item.body || []) body.append(block(b, item));
  a.append(body);
  if (item.extras && item.extras.length) {
    const d = el("details", "extras");
    d.append(el("summary", "", "extras (" + item.extras.length + "): " + item.extras.map((x) => x[0]).join(", ")));
    for (const [k, v] of item.extras) d.append(el("div", "label", k), el("pre", "code", v));
    a.append(d);
  }
  markSecrets(a);
  if (T.hitSet.has(i) && T.mode === "history") { a.classList.add("hit"); highlight(a); }
  if (T.hits[T.hitAt] === i && T.mode === "history") a.classList.add("hit-current");
  if (T.target === i) a.classList.add("target");
  return a;
}

function highlight(node) {
  const q = T.query;
  if (!q) return;
  const cs = $("search-case").checked;
  const needle = cs ? q : q.toLowerCase();
  const walker = document.createTreeWalker(node.querySelector(".body") || node, NodeFilter.SHOW_TEXT);
  const found = [];
  while (walker.nextNode()) found.push(walker.currentNode);
  for (const t of found) {
    const text = t.nodeValue, hay = cs ? text : text.toLowerCase();
    let at = hay.indexOf(needle);
    if (at < 0) continue;
    const frag = document.createDocumentFragment();
    let last = 0;
    while (at >= 0) {
      frag.append(text.slice(last, at), el("mark", "", text.slice(at, at + needle.length)));
      last = at + needle.length;
      at = hay.indexOf(needle, last);
    }
    frag.append(text.slice(last));
    t.replaceWith(frag);
  }
}
