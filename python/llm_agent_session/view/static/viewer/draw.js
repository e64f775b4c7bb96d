// Drawing one envelope: the element for envelope i from the window cache (a placeholder
// until fetched), its badges and blocks (a tool call's card, a model's thinking: card.js),
// folded when a compaction or rewind took it out, a thin line when it is part of a tool
// call's card above, one line for a run of import checkpoints, and marked where the search
// hit it. Text is set as text; only the server's Markdown is set as HTML.
import { card, thinking } from "./card.js";
import { $, el, fmtInt, usageWords } from "./dom.js";
import { markSecrets } from "./secrets.js";
import { T } from "./state.js";
import { key } from "./windows.js";

const PART = { dispatch: "its dispatch", result: "its result", settle: "its settle" };

function badge(b) {
  const e = el(b.to ? "button" : "span", "badge " + (b.cls || ""), b.text);
  if (b.to) { e.type = "button"; e.dataset.to = b.to; e.title = "go to " + b.to; }
  return e;
}

function block(b, item, open) {
  if (b.thinking !== undefined) return thinking(b);
  if (b.call && b.call.op) return card(b.call, badge, (n) => moreButton(item, n), open);
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

// A message's usage: its figures ("—" where the line states none), and where its response
// is counted when that is a later line (Claude Code writes one line per streamed block).
function tokensLine(t) {
  const repeat = t.counted === false;   // null: not known yet (a big file's usage still being read)
  const line = el("div", "tokens-line" + (repeat ? " repeat" : ""), "tokens: " + usageWords(t));
  if (repeat) {
    line.append(" ");
    if (t.counted_at) {
      const b = badge({ text: "the same response as a later line: counted there", cls: "link", to: t.counted_at });
      line.append(b);
    } else {
      line.append(el("span", "badge note", "not counted: a later line of its response is"));
    }
  }
  return line;
}

function moreButton(item, n) {
  const e = el("button", "more", "shortened: show all " + fmtInt(n) + " characters");
  e.type = "button"; e.dataset.more = String(item.i);
  return e;
}

// Whether envelope i, folded by default (taken out by a compaction or rewind, or part of a
// card), is shown unfolded: the reader's choice, else where a search hit or a jump is.
function unfoldedAt(i, byTarget) {
  if (T.folds.has(i)) return T.folds.get(i);
  return T.mode === "history" && (T.hitSet.has(i) || (byTarget && T.target === i));
}

// A run of import checkpoints: one line until unfolded by the reader or a search hit, and
// always while a jump's target is in it (folded, the target would be a line of no height).
function runOpen(run) {
  if (T.target !== null && T.target >= run.start && T.target < run.start + run.count) return true;
  if (T.folds.has(run.start)) return T.folds.get(run.start);
  for (let k = run.start; k < run.start + run.count; k++) if (T.hitSet.has(k)) return true;
  return false;
}

function runLine(item, i) {
  const { start, count } = item.run;
  if (i !== start) {   // inside the folded run: in the list, not on the screen
    const hidden = el("article", "env run-hidden");
    hidden.dataset.envelopeId = item.id; hidden.dataset.i = String(i);
    return hidden;
  }
  const a = el("article", "env meta bookkeeping");
  a.dataset.envelopeId = item.id; a.dataset.i = String(i);
  const head = el("div", "head");
  head.append(el("span", "title", count === 1 ? "import checkpoint" : fmtInt(count) + " import checkpoints"));
  head.append(el("span", "meta", "#" + fmtInt(start) + (count > 1 ? "–" + fmtInt(start + count - 1) : "")));
  head.append(runButton(item.run, "show"));
  a.append(head);
  return a;
}

function runButton(run, text) {
  const b = el("button", "fold", text);
  b.type = "button"; b.dataset.run = String(run.start); b.dataset.count = String(run.count);
  return b;
}

export function envelopeNode(i) {
  const item = T.cache.get(key(i));
  if (!item) {
    const p = el("article", "env loading", "…");
    p.dataset.i = String(i);
    return p;
  }
  const history = T.mode === "history";
  if (item.run && history && !runOpen(item.run)) return Object.assign(runLine(item, i), { run: item.run });
  const removed = (item.badges || []).some((b) => b.cls === "removed");
  const part = history && item.part ? item.part : null;
  const a = el("article", "env " + (item.cls || "") + (removed ? " removed" : "") + (part ? " part" : ""));
  if (item.run) a.run = item.run;   // its run is drawn again as a whole when a jump goes in or out (list.js)
  a.dataset.envelopeId = item.id;
  a.dataset.i = String(i);
  const head = el("div", "head");
  if (part) head.append(el("span", "part-mark", "↳"));
  head.append(el("span", "title", item.title || item.type));
  // A part of a card says its state and fate; the links between the parts are the card's.
  for (const b of item.badges || []) if (!part || !["link", "note"].includes(b.cls)) head.append(badge(b));
  if (part) {
    const up = badge({ text: "part of the card above", cls: "link", to: part.of });
    up.title = PART[part.what] + ", on the card of #" + fmtInt(part.i);
    head.append(up);
  }
  const meta = el("span", "meta", (item.ts ? item.ts.replace("T", " ").replace("Z", "") + " · " : "") +
    (T.mode === "live" ? "live #" : "#") + fmtInt(i));
  meta.title = item.id;
  head.append(meta);
  if (history) {
    const raw = el("button", "raw", "raw");
    raw.type = "button"; raw.dataset.raw = String(i); raw.title = "the line as it is in the file";
    head.append(raw);
  }
  if (item.run && history) head.append(runButton(item.run, item.run.count === 1 ? "fold" : "fold " + fmtInt(item.run.count)));
  a.append(head);
  let open = T.hitSet.has(i) && history, bare = false;
  if (removed || part) {
    // Folded unless the reader unfolded it, or it holds a search hit (until folded again),
    // or (a part of a card) a jump went to it.
    const unfolded = unfoldedAt(i, !!part);
    open = open || unfolded;
    bare = part && !unfolded;   // a thin line: its body is made when it is unfolded
    if (unfolded) a.classList.add("unfolded");
    const fold = el("button", "fold", unfolded ? "fold" : "show");
    fold.type = "button"; fold.dataset.fold = "1";
    head.append(fold);
    if (removed && !part && item.preview) a.append(el("div", "preview", item.preview));
  }
  if (bare) { markSecrets(a); return marked(a, i); }
  if (item.tokens) a.append(tokensLine(item.tokens));
  const body = el("div", "body");
  for (const b of item.body || []) body.append(block(b, item, open));
  a.append(body);
  if (item.extras && item.extras.length) {
    const d = el("details", "extras");
    d.append(el("summary", "", "extras (" + item.extras.length + "): " + item.extras.map((x) => x[0]).join(", ")));
    for (const [k, v] of item.extras) d.append(el("div", "label", k), el("pre", "code", v));
    a.append(d);
  }
  markSecrets(a);   // before the search marks its hits: a marker stays whole
  if (T.hitSet.has(i) && history) {
    highlight(a);
    for (const d of a.querySelectorAll("details.thinking")) if (d.querySelector("mark")) d.open = true;
  }
  return marked(a, i);
}

function marked(a, i) {   // a search hit, the current one, a jump's target
  const history = T.mode === "history";
  if (T.hitSet.has(i) && history) a.classList.add("hit");
  if (T.hits[T.hitAt] === i && history) a.classList.add("hit-current");
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
