// Every address the page builds, here alone: the data API's (/api/NAME?...), a transcript's
// page (/t/NAME, the shelf's links) and back from it, and the place shown (?at=ID, a deep
// link; ?mode=live).

function url(path, params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) if (v !== undefined && v !== null) q.set(k, String(v));
  const s = q.toString();
  return s ? path + "?" + s : path;
}

// A request to the data API: /api/ENDPOINT with its parameters (those undefined or null left out).
export const apiURL = (endpoint, params) => url("/api/" + endpoint, params);

// A transcript's page, from its name as the shelf lists it (its link).
export const transcriptHref = (link) => "/t/" + link.split("/").map(encodeURIComponent).join("/");

// The transcript a page's path names (null: the shelf).
export function transcriptOf(path) {
  return path.startsWith("/t/") ? path.slice(3).split("/").map(decodeURIComponent).join("/") : null;
}

// This page's address with the place shown: `at` the envelope's id (history only), and the mode.
export function placeAddress(at, mode) {
  const p = new URLSearchParams(location.search);
  p.delete("token");
  if (mode === "history") p.set("at", at);
  if (mode === "live") p.set("mode", "live"); else p.delete("mode");
  const s = p.toString();
  return location.pathname + (s ? "?" + s : "");
}
