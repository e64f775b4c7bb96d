// The shelf: every transcript under the PATHs given, one row each, read as the server
// lists them (/api/shelf, polled until done); grouped by project, a subagent nested under
// its parent, sorted by a column, filtered by the text typed (shelf_tree.js); a virtual
// list of fixed-height lines.
import { getJSON } from "./api.js";
import { $, el, fmtBytes, fmtInt, fmtTokens, status, usageWords } from "./dom.js";
import { apiURL, transcriptHref } from "./links.js";
import { startShelfSearch } from "./shelf_search.js";
import { arrange, shortProject } from "./shelf_tree.js";

const ROW = 46;   // px, every line of the list

function cell(text, cls, title) {
  const c = el("span", cls, text);
  if (title) c.title = title;
  return c;
}

const minute = (ts) => ts ? ts.replace("T", " ").slice(0, 16) : "";
const second = (ts) => ts ? ts.replace("T", " ").slice(0, 19) + " UTC" : "";

// What a tokens cell says on hover: each figure, the responses counted, those without usage.
function tokensTitle(u) {
  if (!u) return "";
  return usageWords(u) + " · " + fmtInt(u.responses) + (u.responses === 1 ? " response" : " responses") +
    (u.unmeasured ? " (" + fmtInt(u.unmeasured) + " without usage)" : "");
}

function rowElement(line, parents) {
  const r = line.row;
  const a = el("a", "shelf-row verdict-" + (r.verdict || "").replace(/ /g, "-"));
  if (r.link) a.href = transcriptHref(r.link);
  const t = el("span", "title-cell");
  const under = el("span", "under");
  if (r.subagent) {
    const alone = r.parent && !parents.has(r.parent);
    under.append(el("span", "tag", r.subagent + (alone ? " (its parent is not on the shelf)" : "")));
  }
  under.append(el("span", "name", r.name));
  t.append(el("span", "title", r.title || r.name), under);
  a.append(t,
    cell(shortProject(r.project), "project", r.project || ""),
    cell(r.session || "", "session", r.session_id || ""),
    cell([r.agent, r.model].filter(Boolean).join(" · ") + (r.source ? " (imported)" : ""), "", r.source || ""),
    cell(minute(r.first), "time", second(r.first)), cell(minute(r.last), "time", second(r.last)),
    cell(fmtTokens(r.tokens), "num tokens", tokensTitle(r.usage)),
    cell(r.size !== undefined ? fmtBytes(r.size) : "", "num"),
    cell(r.messages !== undefined ? fmtInt(r.messages) + " (" + fmtInt(r.live) + ")" : "", "num"),
    cell(fmtInt(r.tool_calls), "num"), cell(fmtInt(r.failed), "num" + (r.failed ? " bad" : "")),
    cell(fmtInt(r.pending), "num" + (r.pending ? " warn" : "")),
    cell(r.verdict + (r.why ? ": " + r.why : ""), "verdict", r.error || r.why || ""));
  const wrap = el("div", "shelf-line" + (line.depth ? " child" : ""));
  if (line.children) {
    const b = el("button", "nest", (line.open ? "▾ " : "▸ ") + line.children);
    b.type = "button"; b.dataset.open = r.name;
    b.title = line.children + (line.children === 1 ? " subagent" : " subagents") + (line.open ? ": hide" : ": show");
    wrap.append(b);
  } else {
    wrap.append(el("span", "nest"));
  }
  wrap.append(a);
  return wrap;
}

function groupElement(line) {
  const wrap = el("div", "shelf-line group");
  const b = el("button", "nest", line.folded ? "▸" : "▾");
  b.type = "button"; b.dataset.group = line.key;
  b.title = line.folded ? "show this project's transcripts" : "fold this project";
  const name = el("span", "group-name", line.key ? shortProject(line.key) : "no project");
  if (line.key) name.title = line.key;
  const tokens = el("span", "dim tokens", "tokens " + fmtTokens(line.totals.tokens));
  tokens.title = usageWords(line.totals);
  wrap.append(b, name, el("span", "dim", (line.key ? line.key + " · " : "") + fmtInt(line.count) +
    (line.count === 1 ? " transcript" : " transcripts")), tokens);
  return wrap;
}

export function openShelf() {
  $("reader").remove();   // one page at a time: its search box is then the page's only one
  $("shelf").hidden = false;
  document.title = "Transcripts: llm-agent-session view";
  const rows = [], names = new Set();
  const view = { sortKey: null, sortDir: 1, folded: new Set(), open: new Set() };
  let lines = [], done = false;
  const box = $("shelf-rows");

  function refilter() {
    const got = arrange(rows, Object.assign({ filter: $("filter").value, group: $("group").checked }, view));
    lines = got.lines;
    box.style.height = (lines.length * ROW) + "px";
    $("shelf-count").textContent = fmtInt(got.shown) + " of " + fmtInt(rows.length) + " transcripts" + (done ? "" : " (reading…)");
    $("shelf-tokens").textContent = "tokens " + fmtTokens(got.totals.tokens);
    $("shelf-tokens").title = "the rows shown, together: " + usageWords(got.totals);
    draw();
  }
  function draw() {
    const top = box.getBoundingClientRect().top + window.scrollY;
    const first = Math.max(0, Math.floor((window.scrollY - top) / ROW) - 10);
    const last = Math.min(lines.length, first + Math.ceil(window.innerHeight / ROW) + 20);
    box.replaceChildren();
    for (let k = first; k < last; k++) {
      const e = lines[k].kind === "group" ? groupElement(lines[k]) : rowElement(lines[k], names);
      e.style.top = (k * ROW) + "px";
      box.append(e);
    }
  }
  async function poll() {
    try {
      const got = await getJSON(apiURL("shelf", { from: rows.length }));
      rows.push(...got.rows);
      for (const r of got.rows) names.add(r.name);
      done = got.done;
      refilter();
      if (!done) setTimeout(poll, rows.length ? 250 : 100);
    } catch (e) { status("shelf: " + e.message); setTimeout(poll, 1000); }
  }
  $("filter").addEventListener("input", refilter);
  $("group").addEventListener("change", refilter);
  box.addEventListener("click", (e) => {
    const b = e.target.closest("button.nest");
    if (!b) return;
    const [set, key] = b.dataset.group !== undefined ? [view.folded, b.dataset.group] : [view.open, b.dataset.open];
    if (set.has(key)) set.delete(key); else set.add(key);
    refilter();
  });
  for (const h of document.querySelectorAll("#shelf-head [data-key]")) {
    h.addEventListener("click", () => {
      const key = h.dataset.key;
      view.sortDir = view.sortKey === key ? -view.sortDir : 1;
      view.sortKey = key;
      refilter();
    });
  }
  window.addEventListener("scroll", () => requestAnimationFrame(draw), { passive: true });
  window.addEventListener("resize", draw);
  startShelfSearch();
  poll();
}
