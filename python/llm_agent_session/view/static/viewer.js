// llm-agent-session view: the page. Hand-written, no build step, no dependency.
//
// Everything from a transcript is set as text (textContent), never as markup; the one
// exception is an assistant's Markdown, which the server sends as HTML it made without
// any markup from the transcript (view/markdown.py). The Content-Security-Policy allows
// this file and the style sheet only.
//
// A transcript is one virtual list over the whole file: the page holds a window of
// envelopes around the place shown (at most MAX_RENDERED elements), fetched from
// /api/window. The document's scrollbar spans the whole file: dragging it maps its
// position to an envelope; the wheel and the keys move the list by pixels through the
// envelopes' measured heights (each with the gap above it), and the scrollbar is set to
// match when scrolling stops. Home and End go to the list's ends; at the end the list
// follows what is appended. See docs/viewer.md.
"use strict";
(() => {
  const $ = (id) => document.getElementById(id);
  const WINDOW = 24;            // envelopes a fetch asks for
  const EST = 140;              // height of an envelope not measured yet (px)
  const MAX_HEIGHT = 8000000;   // the spacer's largest height (browsers stop near 16-33M px)
  const MAX_RENDERED = 200;     // envelope elements in the page at any time
  const KEEP = 600;             // envelopes kept in the cache around the place shown
  const FOLLOW_MS = 500;        // how often a transcript is asked for what was appended
  const END_GAP = 8;            // below the last envelope at the end (px)

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function url(path, params) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(params || {})) if (v !== undefined && v !== null) q.set(k, String(v));
    const s = q.toString();
    return s ? path + "?" + s : path;
  }
  // The run's token (docs/viewer.md, the security model). The URL the command printed
  // carries it after "#", which the browser sends to no server; this tab keeps it in
  // sessionStorage (this origin only, port included) and sends it as a header on every API
  // request. Never a cookie: the browser would send that to every server on this host,
  // whatever its port. A tab opened from this one (no copy of sessionStorage) asks the
  // viewer's other tabs for it; a link pasted into another browser gets none.
  const TOKEN = "llm-agent-session-view-token";
  const NO_TOKEN = "no token: open the URL that llm-agent-session view printed (the part after # " +
    "carries this run's token); a link copied from the address bar works only in this browser while a tab " +
    "of this viewer is open";
  const tabs = new BroadcastChannel(TOKEN);
  const given = new URLSearchParams(location.hash.slice(1)).get("token");
  if (given) {
    sessionStorage.setItem(TOKEN, given);
    history.replaceState(null, "", location.pathname + location.search);   // out of the address bar
  }
  window.addEventListener("hashchange", () => {   // the printed URL pasted over this page: no reload by itself
    const again = new URLSearchParams(location.hash.slice(1)).get("token");
    if (again) { sessionStorage.setItem(TOKEN, again); location.replace(location.pathname + location.search); }
  });
  const tokenReady = new Promise((resolve) => {
    if (sessionStorage.getItem(TOKEN)) return resolve(sessionStorage.getItem(TOKEN));
    tabs.addEventListener("message", (e) => {
      if (e.data && typeof e.data.token === "string" && !sessionStorage.getItem(TOKEN)) {
        sessionStorage.setItem(TOKEN, e.data.token);
        resolve(e.data.token);
      }
    });
    tabs.postMessage("token?");
    setTimeout(() => resolve(sessionStorage.getItem(TOKEN)), 1000);
  });
  tabs.addEventListener("message", (e) => {   // another tab of this viewer asks for it
    if (e.data === "token?" && sessionStorage.getItem(TOKEN)) tabs.postMessage({ token: sessionStorage.getItem(TOKEN) });
  });
  async function api(u, init) {   // every request to /api/ goes through here
    const t = await tokenReady;
    if (!t) throw new Error(NO_TOKEN);
    const r = await fetch(u, Object.assign({ credentials: "omit", headers: { authorization: "Bearer " + t } }, init || {}));
    if (r.status === 403 && !(r.headers.get("content-type") || "").includes("json")) throw new Error(NO_TOKEN);
    return r;
  }
  async function getJSON(u, init) {
    const r = await api(u, init);
    const body = await r.json().catch(() => ({ error: r.status + " " + r.statusText }));
    if (!r.ok) throw new Error(body.error || (r.status + " " + r.statusText));
    return body;
  }
  function status(text) { $("status").textContent = text || ""; }
  function fmtBytes(n) {
    if (n < 1000) return n + " B";
    const units = ["KB", "MB", "GB", "TB"];
    let v = n, u = -1;
    while (v >= 1000 && u < units.length - 1) { v /= 1000; u++; }
    return v.toFixed(1) + " " + units[u];
  }
  const fmtInt = (n) => (n === null || n === undefined) ? "?" : Number(n).toLocaleString("en");
  const linkPath = (link) => "/t/" + link.split("/").map(encodeURIComponent).join("/");

  // ---------------------------------------------------------------- the shelf

  function openShelf() {
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
      if (r.link) a.href = linkPath(r.link);
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
        const got = await getJSON(url("/api/shelf", { from: rows.length }));
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

  // ---------------------------------------------------------------- a transcript

  function openReader(link) {
    $("shelf").remove();
    $("reader").hidden = false;
    const T = {
      link, info: null, generation: -1, mode: "history", count: 0,
      cache: new Map(), heights: new Map(), nodes: new Map(), loading: new Set(), stale: new Set(),
      anchor: { index: 0, offset: 0 }, atEnd: false,
      lastY: 0, suppress: null, input: 0, idle: null, avg: EST,
      hits: [], hitSet: new Set(), hitAt: -1, hitTotal: 0, searchDone: true, searchAbort: null, query: "",
      target: null, ready: {}, about: "", unremembered: false, folds: new Map(),
    };
    const items = $("items"), layer = $("layer"), spacer = $("spacer");
    const params = new URLSearchParams(location.search);
    if (params.get("mode") === "live") { T.mode = "live"; $("mode-live").checked = true; }

    // -- fetching windows

    function key(i) { return T.mode + ":" + i; }
    function fetchWindow(i) {
      const start = Math.max(0, Math.floor(i / WINDOW) * WINDOW);
      const k = T.mode + ":" + T.generation + ":" + start;
      if (T.loading.has(k)) return;
      T.loading.add(k);
      const mode = T.mode, gen = T.generation;
      getJSON(url("/api/window", { t: link, from: start, count: WINDOW, mode }))
        .then((got) => {
          if (mode !== T.mode || gen !== T.generation) return;
          if (mode === "live" && !got.ready) { status("computing the live conversation…"); setTimeout(() => { T.loading.delete(k); render(); }, 500); return; }
          for (const item of got.items) { T.cache.set(key(item.i), item); T.stale.delete(item.i); }
          if (got.count !== null && got.count !== undefined && got.count !== T.count && mode === "live") { T.count = got.count; sizeSpacer(); }
          T.loading.delete(k);
          render();
        })
        .catch((e) => { T.loading.delete(k); status(e.message); });
    }
    function trimCache() {
      if (T.cache.size <= KEEP * 2) return;
      const a = T.anchor.index;
      for (const k of T.cache.keys()) {
        const i = Number(k.slice(k.indexOf(":") + 1));
        if (Math.abs(i - a) > KEEP) T.cache.delete(k);
      }
    }
    function forget(from) {   // fetch again what was fetched from `from` on (new badges); shown until then
      for (const k of T.cache.keys()) { const i = Number(k.slice(k.indexOf(":") + 1)); if (i >= from) T.stale.add(i); }
      T.loading.clear();
    }

    // -- drawing one envelope

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
    function envelopeNode(i) {
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

    // -- the virtual list

    function height(i) { return T.heights.has(i) ? T.heights.get(i) : T.avg; }
    function viewHeight() { return layer.clientHeight || window.innerHeight; }
    function maxScroll() { return Math.max(0, document.documentElement.scrollHeight - window.innerHeight); }
    function sizeSpacer() {
      const total = Math.min(MAX_HEIGHT, Math.max(T.count * T.avg, 0));
      spacer.style.height = Math.max(total, 1) + "px";
    }

    function render() {
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
        if (!item || T.stale.has(i)) fetchWindow(i);
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
          T.avg = avg; sizeSpacer(); syncScrollbar();
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
    function syncScrollbar() {
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
    function onScroll() {
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
      render();
      clearTimeout(T.idle);
      // At an edge of the scrollbar with more beyond it: set the bar now, so it can go on.
      if ((y <= 0 && T.anchor.index > 0) || (y >= R - 1 && !T.atEnd)) syncScrollbar();
      else T.idle = setTimeout(syncScrollbar, 200);
    }
    function jumpTo(i, mark) {
      if (i === null || i === undefined || i < 0) return;
      T.atEnd = false;
      T.anchor = { index: Math.min(i, Math.max(T.count - 1, 0)), offset: 0 };
      T.target = mark ? i : null;
      for (const [j, node] of T.nodes) if (j === i || node.classList.contains("target")) { node.remove(); T.nodes.delete(j); }
      render();
      syncScrollbar();
    }
    function remember() {   // the place shown, in the address: a deep link that survives reload
      const item = T.cache.get(key(T.anchor.index));
      // Not fetched yet (a jump far away): the address is set when it arrives (render).
      T.unremembered = !item;
      if (!item) return;
      const p = new URLSearchParams(location.search);
      p.delete("token");
      if (item && T.mode === "history") p.set("at", item.id); else if (T.mode === "history") p.delete("at");
      if (T.mode === "live") p.set("mode", "live"); else p.delete("mode");
      const s = p.toString();
      history.replaceState(null, "", location.pathname + (s ? "?" + s : ""));
    }

    // -- jumps

    async function goToId(id) {
      try {
        const got = await getJSON(url("/api/locate", { t: link, id }));
        if (got.wait) { status("still reading the index…"); await new Promise((r) => setTimeout(r, 250)); return goToId(id); }
        if (got.i === null) { status("no envelope " + id + " in this transcript" + (T.ready.history ? "" : " (or the index is still being read)")); return false; }
        if (T.mode !== "history") setMode("history");
        jumpTo(got.i, true);
        status(T.about);
        return true;
      } catch (e) { status(e.message); return false; }
    }
    async function goToTime(text) {
      try {
        const got = await getJSON(url("/api/locate", { t: link, time: text }));
        if (got.wait) { status("still reading the index…"); setTimeout(() => goToTime(text), 500); return; }
        if (got.i === null) { status("nothing at or after " + text); return; }
        if (T.mode !== "history") setMode("history");
        jumpTo(got.i, true);
        status("the first envelope in file order at or after " + text);
      } catch (e) { status(e.message); }
    }
    async function goToKind(dir) {
      const kind = $("jump-kind").value;
      if (T.mode !== "history") setMode("history");
      // From the envelope at the top of the screen: the next at or after it, or after it
      // where it is the last jump's target (still where the jump put it); the previous before it.
      const here = T.anchor.index, onTarget = T.target === here && T.anchor.offset === 0;
      const from = dir === "back" || onTarget ? here : here - 1;
      try {
        const got = await getJSON(url("/api/locate", { t: link, kind, from, dir }));
        if (got.wait) { status("still reading the history…"); return; }
        if (got.i === null) { status("no " + $("jump-kind").selectedOptions[0].text + (dir === "back" ? " before" : " after") + " this"); return; }
        jumpTo(got.i, true);
        status(T.about);
      } catch (e) { status(e.message); }
    }

    // -- search

    async function search() {
      const q = $("search").value;
      if (T.searchAbort) T.searchAbort.abort();
      T.hits = []; T.hitSet = new Set(); T.hitAt = -1; T.hitTotal = 0; T.query = q; T.searchDone = false;
      refreshHits();
      if (!q) { T.searchDone = true; showCount(); return; }
      if (T.mode !== "history") setMode("history");
      const ctl = new AbortController();
      T.searchAbort = ctl;
      try {
        const r = await api(url("/api/search", { t: link, q, case: $("search-case").checked ? 1 : 0,
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
    function nextHit(step) {
      if (!T.hits.length) return;
      T.hitAt = (T.hitAt + step + T.hits.length) % T.hits.length;
      jumpTo(T.hits[T.hitAt], false);
      refreshHits();
      showCount();
    }

    // -- modes, info, follow

    function setMode(mode) {
      T.mode = mode;
      $("mode-live").checked = mode === "live";
      T.cache.clear(); T.heights.clear(); T.loading.clear(); T.stale.clear(); T.folds.clear();
      for (const node of T.nodes.values()) node.remove();
      T.nodes.clear();
      T.anchor = { index: 0, offset: 0 }; T.target = null;
      T.count = mode === "live" ? (T.info && T.info.live !== null ? T.info.live : 0) : (T.info ? T.info.count : 0);
      T.atEnd = false;
      sizeSpacer();
      render();
      syncScrollbar();
    }
    function showInfo(info) {
      T.info = info;
      const v = info.verdict;
      const title = info.title || info.name;
      $("title").textContent = title;
      document.title = title + ": llm-agent-session view";
      const parts = [fmtInt(info.count) + " envelopes", fmtBytes(info.size)];
      if (info.live !== null) parts.push(fmtInt(info.live) + " live messages");
      if (info.pending) parts.push(fmtInt(info.pending) + " pending (may or may not have run)");
      if (v) parts.push("load: " + v.text + (v.why ? " (" + v.why + ")" : ""));
      if (info.warnings) parts.push(fmtInt(info.warnings) + " lines skipped");
      if (!info.ready.history) parts.push("reading the history…");
      if (info.error) parts.push(info.error);
      T.about = parts.join(" · ");
      status(T.about);
    }
    async function follow() {
      try {
        const got = await getJSON(url("/api/follow", { t: link }));
        const wasReady = T.ready.history;
        T.ready = got.ready;
        if (got.generation !== T.generation) {   // replaced (a repair): everything again
          T.generation = got.generation;
          const info = await getJSON(url("/api/transcript", { t: link }));
          showInfo(info);
          const keepEnd = T.atEnd;
          setMode(T.mode);
          if (keepEnd) { T.atEnd = true; render(); syncScrollbar(); }
        } else {
          const n = T.mode === "live" ? (got.live === null ? 0 : got.live) : got.count;
          if (n !== T.count || (got.ready.history && !wasReady)) {
            const old = T.count;
            T.count = n;
            forget(got.ready.history && !wasReady ? 0 : Math.max(0, old - WINDOW));
            sizeSpacer();
            render();
            if (T.atEnd) syncScrollbar();
          }
          if (n !== (T.info && (T.mode === "live" ? T.info.live : T.info.count)) || (got.ready.history && !wasReady) || (!T.info.verdict && got.ready.verdict)) {
            showInfo(await getJSON(url("/api/transcript", { t: link })));
          }
        }
      } catch (e) { status(e.message); }
      setTimeout(follow, FOLLOW_MS);
    }

    // -- events

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
    items.addEventListener("click", async (e) => {
      const b = e.target.closest("button");
      if (!b) return;
      if (b.dataset.to) { goToId(b.dataset.to); return; }
      const art = b.closest("article");
      if (b.dataset.fold) {
        const unfolded = art.classList.toggle("unfolded");
        T.folds.set(Number(art.dataset.i), unfolded);
        b.textContent = unfolded ? "fold" : "show";
        render();
        return;
      }
      if (b.dataset.more) {
        const i = Number(b.dataset.more);
        const full = await getJSON(url("/api/envelope", { t: link, i, full: 1 }));
        T.cache.set(key(i), full);
        const node = T.nodes.get(i);
        if (node) { node.remove(); T.nodes.delete(i); }
        render();
        return;
      }
      if (b.dataset.raw) {
        const old = art.querySelector(".rawline");
        if (old) { old.remove(); render(); return; }
        const got = await getJSON(url("/api/envelope", { t: link, i: Number(b.dataset.raw), raw: 1 }));
        art.append(el("pre", "code rawline", got.raw));
        render();
      }
    });
    items.addEventListener("toggle", () => render(), true);
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
    function toEnd() { T.atEnd = true; render(); syncScrollbar(); }
    $("to-start").addEventListener("click", () => jumpTo(0, false));
    $("to-end").addEventListener("click", toEnd);

    function layout() {   // the list sits under the tool bars
      const top = $("bar").offsetHeight + $("tools").offsetHeight;
      layer.style.top = top + "px";
    }

    (async () => {
      layout();
      window.addEventListener("resize", layout);
      try {
        const info = await getJSON(url("/api/transcript", { t: link }));
        T.generation = info.generation;
        T.ready = info.ready;
        showInfo(info);
        setMode(T.mode);
        const at = params.get("at");
        if (at) await goToId(at);
        setTimeout(follow, FOLLOW_MS);
      } catch (e) {
        status(e.message);
      }
    })();
  }

  const path = location.pathname;
  if (path.startsWith("/t/")) {
    openReader(path.slice(3).split("/").map(decodeURIComponent).join("/"));
  } else {
    openShelf();
  }
})();
