// The run's token and every request to the data API (docs/viewer.md, the security model).
// The URL the command printed carries it after "#", which the browser sends to no server;
// this tab keeps it in sessionStorage (this origin only, port included) and sends it as a
// header on every API request. Never a cookie: the browser would send that to every server
// on this host, whatever its port. A tab opened from this one (no copy of sessionStorage)
// asks the viewer's other tabs for it; a link pasted into another browser gets none.

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

export async function api(u, init) {   // every request to /api/ goes through here
  const t = await tokenReady;
  if (!t) throw new Error(NO_TOKEN);
  const r = await fetch(u, Object.assign({ credentials: "omit", headers: { authorization: "Bearer " + t } }, init || {}));
  if (r.status === 403 && !(r.headers.get("content-type") || "").includes("json")) throw new Error(NO_TOKEN);
  return r;
}

export async function getJSON(u, init) {
  const r = await api(u, init);
  const body = await r.json().catch(() => ({ error: r.status + " " + r.statusText }));
  if (!r.ok) throw new Error(body.error || (r.status + " " + r.statusText));
  return body;
}
