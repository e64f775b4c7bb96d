// The page's small helpers: an element made with its text (set as text, never as markup),
// the status line, and numbers and sizes as the page writes them.

export const $ = (id) => document.getElementById(id);

export function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}

export function status(text) { $("status").textContent = text || ""; }

export function fmtBytes(n) {
  if (n < 1000) return n + " B";
  const units = ["KB", "MB", "GB", "TB"];
  let v = n, u = -1;
  while (v >= 1000 && u < units.length - 1) { v /= 1000; u++; }
  return v.toFixed(1) + " " + units[u];
}

// Digits grouped by threes ("1,234,567"), as toLocaleString("en") writes a whole number: its
// first call loads the locale's data, 45 ms of a reopened transcript's first screen (profiled).
function grouped(n) {
  const v = Number(n);
  if (!Number.isFinite(v)) return String(v);
  return (v < 0 ? "-" : "") + String(Math.round(Math.abs(v))).replace(/\B(?=(\d{3})+$)/g, ",");
}

export const fmtInt = (n) => (n === null || n === undefined) ? "?" : grouped(n);

// A token count: "—" where the source recorded none (unknown is never 0).
export const fmtTokens = (n) => (n === null || n === undefined) ? "—" : grouped(n);

const FIGURES = [["input", "input"], ["output", "output"], ["cache_read", "cache read"], ["cache_write", "cache write"]];

// Each figure of a usage ({input, output, cache_read, cache_write}), "—" for one not recorded.
export function usageWords(u) {
  return FIGURES.map(([k, words]) => words + " " + fmtTokens(u ? u[k] : null)).join(" · ");
}
