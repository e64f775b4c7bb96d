// The shelf's rows as the page lists them: filtered by the text typed, sorted by a column,
// a subagent's row nested under its parent's (shown when the parent is opened, or when the
// filter finds it), grouped by project (a group folded to its header). A subagent whose
// parent is not on the shelf is a row of its own. Pure functions: shelf.js draws the lines.

// A project as the shelf shows it: its last two path components (the whole path on hover).
export function shortProject(project) {
  if (!project) return "";
  const parts = project.split(/[\\/]/).filter(Boolean);
  return parts.length ? parts.slice(-2).join("/") : project;
}

// Token totals over rows: each figure summed over the rows that state it (null where none
// does: unknown is never 0), and `tokens`, the four together.
export function newTotals() {
  return { input: null, output: null, cache_read: null, cache_write: null, tokens: null };
}

export function addTokens(sum, r) {
  const u = r.usage || {};
  for (const k of ["input", "output", "cache_read", "cache_write"]) {
    if (u[k] !== null && u[k] !== undefined) sum[k] = (sum[k] || 0) + u[k];
  }
  if (r.tokens !== null && r.tokens !== undefined) sum.tokens = (sum.tokens || 0) + r.tokens;
  return sum;
}

function matches(r, f) {
  if (!f) return true;
  return [r.name, r.title, r.agent, r.model, r.verdict, r.source, r.project, r.session_id]
    .some((v) => v && v.toLowerCase().includes(f));
}

function compare(key, dir) {
  return (a, b) => {
    const x = a[key], y = b[key];
    if (x === y) return 0;
    if (x === null || x === undefined) return 1;
    if (y === null || y === undefined) return -1;
    return (x < y ? -1 : 1) * dir;
  };
}

// Each row's top-level ancestor on the shelf (itself where it has none, or where the names
// loop), and each top row's children in order of their first event.
function nest(rows) {
  const byName = new Map();
  for (const r of rows) byName.set(r.name, r);
  const children = new Map();
  const tops = [];
  for (const r of rows) {
    let top = r;
    const seen = new Set([r.name]);
    while (top.parent && byName.has(top.parent) && !seen.has(top.parent)) { top = byName.get(top.parent); seen.add(top.name); }
    if (top.parent && seen.has(top.parent) && byName.has(top.parent)) top = r;   // a loop: no nesting
    if (top === r) { tops.push(r); continue; }
    if (!children.has(top.name)) children.set(top.name, []);
    children.get(top.name).push(r);
  }
  for (const list of children.values()) list.sort(compare("first", 1));
  return { tops, children };
}

// The lines to draw: {kind: "group", key, count, folded} and {kind: "row", row, depth,
// children (how many), open}; `shown` counts the rows that match, `totals` their tokens (a
// group's line has its own).
export function arrange(rows, { filter, sortKey, sortDir, group, folded, open }) {
  const f = (filter || "").trim().toLowerCase();
  const { tops, children } = nest(rows);
  let shown = 0;
  const entries = [], totals = newTotals();
  for (const r of tops) {
    const kids = children.get(r.name) || [];
    const found = kids.filter((k) => matches(k, f));
    if (!matches(r, f) && !found.length) continue;
    shown += 1 + (f ? found.length : kids.length);
    const entry = { row: r, kids: f ? found : kids, all: kids.length, forced: !!f && found.length > 0 };
    entry.totals = entry.kids.reduce(addTokens, addTokens(newTotals(), r));
    addTokens(totals, { usage: entry.totals, tokens: entry.totals.tokens });
    entries.push(entry);
  }
  if (sortKey) entries.sort((a, b) => compare(sortKey, sortDir)(a.row, b.row));
  const lines = [];
  const rowLines = (e) => {
    const isOpen = open.has(e.row.name) || e.forced;
    lines.push({ kind: "row", row: e.row, depth: 0, children: e.all, open: isOpen });
    if (isOpen) for (const k of e.kids) lines.push({ kind: "row", row: k, depth: 1, children: 0, open: false });
  };
  if (!group) {
    entries.forEach(rowLines);
    return { lines, shown, totals };
  }
  const groups = new Map();
  for (const e of entries) {
    const key = e.row.project || "";
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(e);
  }
  let keys = [...groups.keys()];
  if (sortKey === "project") keys.sort((a, b) => (a === "" ? 1 : b === "" ? -1 : (a < b ? -1 : a > b ? 1 : 0) * sortDir));
  else keys = keys.filter((k) => k !== "").concat(groups.has("") ? [""] : []);
  for (const key of keys) {
    const members = groups.get(key);
    const count = members.reduce((n, e) => n + 1 + (f ? e.kids.length : e.all), 0);
    const sum = newTotals();
    for (const e of members) addTokens(sum, { usage: e.totals, tokens: e.totals.tokens });
    lines.push({ kind: "group", key, count, folded: folded.has(key), totals: sum });
    if (!folded.has(key)) members.forEach(rowLines);
  }
  return { lines, shown, totals };
}
