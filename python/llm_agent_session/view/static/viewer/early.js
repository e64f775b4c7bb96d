// A transcript's first requests, made as soon as the page runs (viewer.js), while the
// reader's modules are still loading: its summary and the window at its start, side by
// side. Made by the reader, they waited for every module, then the window for the
// summary: two round trips after the last module, where the server was busy reading the
// history (0.1-0.3 s of a 10 GB transcript's first screen, reopened).
import { getJSON } from "./api.js";
import { apiURL } from "./links.js";
import { WINDOW } from "./windows.js";

export function firstRequests(link, params) {
  const info = getJSON(apiURL("transcript", { t: link }));
  info.catch(() => {});   // its error is shown where the reader awaits it
  const mode = params.get("mode") === "live" ? "live" : "history";
  const got = getJSON(apiURL("window", { t: link, from: 0, count: WINDOW, mode }));
  got.catch(() => {});
  return { info, window: { mode, start: 0, got } };
}
