// A tool call as one card (view/cards.py): the tool and its call id, the outcome and how
// long it took, the arguments and the start of the result, each folded when long, the
// settle's error or reason; the lines it is made of one click away (raw). And a model's
// thinking, folded, with its message. Text is set as text.
import { el, fmtInt } from "./dom.js";

const CLIP_LINES = 12;     // a longer text is folded to this many lines
const CLIP_CHARS = 1500;   // or one of more characters

// A block of text as a <pre>, folded when long (unless `open`: a search hit is in it), with
// the button that unfolds it.
export function folded(text, cls, open) {
  const pre = el("pre", "code " + cls, text);
  const lines = text.split("\n").length;
  if (open || (lines <= CLIP_LINES && text.length <= CLIP_CHARS)) return [pre];
  pre.classList.add("clip");
  const b = el("button", "unclip", "show all " + fmtInt(lines) + (lines === 1 ? " line" : " lines"));
  b.type = "button"; b.dataset.unclip = b.textContent;
  return [pre, b];
}

function cardHead(c, badge) {
  const head = el("div", "call-head");
  head.append(el("span", "call-name", c.name));
  if (c.id) head.append(el("span", "dim", c.id));
  for (const x of c.badges || []) head.append(badge(x));
  if (c.duration) {
    const d = el("span", "duration", c.duration.text);
    d.title = "from " + c.duration.from;
    head.append(d);
  }
  const raw = el("button", "raw", "raw");
  raw.type = "button"; raw.dataset.cardRaw = "1";
  raw.title = "the lines it is made of (call, dispatch, result, settle), as they are in the file";
  raw.parts = c.parts || [];   // a property, not an attribute: [what, id, position]
  head.append(raw);
  return head;
}

// The card of a call block that has one (`c.op`); `more` makes the button that fetches
// arguments shortened by the server.
export function card(c, badge, more, open) {
  const box = el("div", "call card");
  box.append(cardHead(c, badge), el("div", "label", "arguments"), ...folded(c.arguments, "args", open));
  if (c.more) box.append(more(c.more));
  if (c.note) box.append(el("div", "label", c.note[0]), ...folded(c.note[1], "note", open));
  if (c.result) {
    const r = c.result;
    const label = "result" + (r.exit_code !== null && r.exit_code !== undefined ? " · exit code " + r.exit_code : "") +
      " · " + fmtInt(r.chars) + (r.chars === 1 ? " character" : " characters");
    box.append(el("div", "label", label), ...folded(r.text || "(empty)", "result", open));
    if (r.shortened) {
      const whole = el("button", "badge link", "the whole result: " + fmtInt(r.chars) + " characters");
      whole.type = "button"; whole.dataset.to = r.to;
      box.append(whole);
    }
  } else if (c.parts && c.parts.length) {
    box.append(el("div", "label", "no result recorded"));
  }
  return box;
}

// A model's thinking: folded to its first words, opened by a click (or by a search hit in it).
export function thinking(b) {
  const d = el("details", "thinking");
  const first = b.thinking.split("\n").find((line) => line.trim()) || "";
  d.append(el("summary", "", "thinking · " + fmtInt(b.chars || b.thinking.length) + " characters: " + first.slice(0, 120)),
    el("div", "text", b.thinking));
  return d;
}
