// The shelf's search box: the text searched for in every transcript on the shelf
// (/api/shelf-search), the hits listed as the server finds them (each ask waits for the
// next ones: a long poll), each a link to its envelope (?at=ID). A new text typed stops the
// old search; a limit on the hits listed, and "more". Text is set as text, never as markup.
import { getJSON } from "./api.js";
import { $, el, fmtBytes, fmtInt } from "./dom.js";
import { apiURL, transcriptHref } from "./links.js";

const PAGE = 100;      // hits listed, then PAGE more each "more"
const TYPING_MS = 150; // a pause in typing starts the search (Enter at once)

const second = (ts) => ts ? ts.replace("T", " ").slice(0, 19) + " UTC" : "";

function hitElement(h) {
  const a = el("a", "shelf-hit");
  if (h.link) a.href = transcriptHref(h.link) + "?at=" + encodeURIComponent(h.id);
  const head = el("div", "hit-head");
  head.append(el("span", "hit-title", h.title || h.name), el("span", "hit-time", second(h.ts)),
    el("span", "dim", h.name + (h.line ? " · line " + fmtInt(h.line) : "") + (h.role ? " · " + h.role : h.type ? " · " + h.type : "")));
  const snippet = el("div", "hit-snippet");
  snippet.append(h.before, el("mark", "", h.match), h.after);   // strings: text nodes
  a.append(head, snippet);
  return a;
}

export function startShelfSearch() {
  const input = $("shelf-search"), matchCase = $("shelf-search-case");
  const box = $("shelf-hits"), list = $("shelf-hits-list"), count = $("shelf-search-count"), more = $("shelf-hits-more");
  let current = null, typing = null;

  const params = (s, extra) => Object.assign({ q: s.q, case: s.matchCase ? 1 : undefined }, extra);

  function stop(s) {
    s.stopped = true;
    if (!s.finished) getJSON(apiURL("shelf-search", params(s, { stop: 1 }))).catch(() => {});
  }

  function begin() {
    clearTimeout(typing);
    const q = input.value;
    if (current && current.q === q && current.matchCase === matchCase.checked) return;
    if (current) stop(current);
    list.replaceChildren();
    more.hidden = true;
    count.textContent = "";
    if (!q) { current = null; box.hidden = true; return; }
    current = { q, matchCase: matchCase.checked, shown: 0, limit: PAGE, stopped: false, finished: false };
    box.hidden = false;
    poll(current);
  }

  async function poll(s) {
    s.finished = false;
    more.hidden = true;
    while (!s.stopped) {
      let got;
      try {
        got = await getJSON(apiURL("shelf-search", params(s, { from: s.shown, limit: s.limit })));
      } catch (e) {
        if (!s.stopped) count.textContent = "search: " + e.message;
        return;
      }
      if (s.stopped) return;
      const add = got.hits.slice(0, Math.max(0, s.limit - s.shown));
      for (const h of add) list.append(hitElement(h));
      s.shown += add.length;
      count.textContent = fmtInt(s.shown) + (s.shown === 1 ? " hit" : " hits") + " · " + fmtInt(got.searched) +
        " of " + fmtInt(got.found) + " files searched (" + fmtBytes(got.bytes) + ")" + (got.done ? "" : "…") +
        (got.error ? " · " + got.error : "");
      if (got.done) {
        s.finished = true;
        more.hidden = !got.more;
        return;
      }
    }
  }

  input.addEventListener("input", () => { clearTimeout(typing); typing = setTimeout(begin, TYPING_MS); });
  input.addEventListener("keydown", (e) => {
    if (e.key === "Enter") { e.preventDefault(); begin(); }
    if (e.key === "Escape") { input.value = ""; begin(); }
  });
  input.addEventListener("search", begin);   // the box's own clear button
  matchCase.addEventListener("change", begin);
  more.addEventListener("click", () => {
    if (!current || !current.finished) return;
    current.limit += PAGE;
    poll(current);
  });
}
