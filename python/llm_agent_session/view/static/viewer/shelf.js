// The shelf: every transcript under the PATHs given, one row each, read as the server
// lists them (/api/shelf, polled until done); sorted by a column, filtered by the text
// typed; a virtual list of fixed-height rows.
import { getJSON } from "./api.js";
import { $, el, fmtBytes, fmtInt, status } from "./dom.js";
import { apiURL, transcriptHref } from "./links.js";

export function openShelf() {
  $("reader").remove();   // one page at a time: its search box is then the page's only one
  $("shelf").hidden = false;
  document.title = "Transcripts: llm-agent-session view";
  const rows = [];
  let shown = [], sortKey = null, sortDir = 1, done = false;
  const ROW = 46;
  const box = $("shelf-rows");

  function matches(r, f) {
    if (!f) return true;
    return [r.name, r.title, r.agent, r.model, r.verdict, r.source].some((v) => v && v.toLowerCase().includes(f));
  }
  function refilter() {
    const f = $("filter").value.trim().toLowerCase();
    shown = rows.filter((r) => matches(r, f));
    if (sortKey) {
      shown.sort((a, b) => {
        const x = a[sortKey], y = b[sortKey];
        if (x === y) return 0;
        if (x === null || x === undefined) return 1;
        if (y === null || y === undefined) return -1;
        return (x < y ? -1 : 1) * sortDir;
      });
    }
    box.style.height = (shown.length * ROW) + "px";
    $("shelf-count").textContent = fmtInt(shown.length) + " of " + fmtInt(rows.length) + " transcripts" + (done ? "" : " (reading…)");
    draw();
  }
  function cell(text, cls, title) {
    const c = el("span", cls, text);
    if (title) c.title = title;
    return c;
  }
  function rowElement(r) {
    const a = el("a", "shelf-row verdict-" + (r.verdict || "").replace(/ /g, "-"));
    if (r.link) a.href = transcriptHref(r.link);
    const t = el("span", "title-cell");
    t.append(el("span", "title", r.title || r.name), el("span", "name", r.name));
    a.append(t,
      cell([r.agent, r.model].filter(Boolean).join(" · ") + (r.source ? " (imported)" : ""), "", r.source || ""),
      cell(r.first ? r.first.replace("T", " ").slice(0, 19) : ""), cell(r.last ? r.last.replace("T", " ").slice(0, 19) : ""),
      cell(r.size !== undefined ? fmtBytes(r.size) : "", "num"),
      cell(r.messages !== undefined ? fmtInt(r.messages) + " (" + fmtInt(r.live) + ")" : "", "num"),
      cell(fmtInt(r.tool_calls), "num"), cell(fmtInt(r.failed), "num" + (r.failed ? " bad" : "")),
      cell(fmtInt(r.pending), "num" + (r.pending ? " warn" : "")),
      cell(r.verdict + (r.why ? ": " + r.why : ""), "verdict", r.error || r.why || ""));
    a.style.top = "0px";
    return a;
  }
  function draw() {
    const top = box.getBoundingClientRect().top + window.scrollY;
    const first = Math.max(0, Math.floor((window.scrollY - top) / ROW) - 10);
    const last = Math.min(shown.length, first + Math.ceil(window.innerHeight / ROW) + 20);
    box.replaceChildren();
    for (let k = first; k < last; k++) {
      const e = rowElement(shown[k]);
      e.style.top = (k * ROW) + "px";
      box.append(e);
    }
  }
  async function poll() {
    try {
      const got = await getJSON(apiURL("shelf", { from: rows.length }));
      rows.push(...got.rows);
      done = got.done;
      refilter();
      if (!done) setTimeout(poll, rows.length ? 250 : 100);
    } catch (e) { status("shelf: " + e.message); setTimeout(poll, 1000); }
  }
  $("filter").addEventListener("input", refilter);
  for (const h of document.querySelectorAll("#shelf-head [data-key]")) {
    h.addEventListener("click", () => {
      const key = h.dataset.key;
      sortDir = sortKey === key ? -sortDir : 1;
      sortKey = key;
      refilter();
    });
  }
  window.addEventListener("scroll", () => requestAnimationFrame(draw), { passive: true });
  window.addEventListener("resize", draw);
  poll();
}
