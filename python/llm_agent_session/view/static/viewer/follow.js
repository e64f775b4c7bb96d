// Live follow: every FOLLOW_MS, /api/follow reads what was appended. More envelopes: the
// list grows (at the end, it stays at the end) and the last window is fetched again for
// its new badges; a new generation (a repair renamed a new file over the path, or a
// preview of a big file's end read whole): all again.
import { getJSON } from "./api.js";
import { status } from "./dom.js";
import { apiURL } from "./links.js";
import { render, sizeSpacer, syncScrollbar } from "./list.js";
import { setMode, showInfo } from "./modes.js";
import { T } from "./state.js";
import { WINDOW, forget } from "./windows.js";

export const FOLLOW_MS = 500;        // how often a transcript is asked for what was appended

export async function follow() {
  try {
    const got = await getJSON(apiURL("follow", { t: T.link }));
    const wasReady = T.ready.history;
    T.ready = got.ready;
    if (got.generation !== T.generation) {   // replaced (a repair): everything again
      T.generation = got.generation;
      const info = await getJSON(apiURL("transcript", { t: T.link }));
      showInfo(info);
      const keepEnd = T.atEnd || (T.info && T.info.preview);   // a preview showed the end
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
      if (n !== (T.info && (T.mode === "live" ? T.info.live : T.info.count)) || (got.ready.history && !wasReady) || (!T.info.verdict && got.ready.verdict) ||
          (got.ready.secrets && !T.info.ready.secrets) ||
          (T.info.tokens && !T.info.tokens.ready)) {   // a big file's tokens, being counted
        showInfo(await getJSON(apiURL("transcript", { t: T.link })));
      }
    }
  } catch (e) { status(e.message); }
  setTimeout(follow, FOLLOW_MS);
}
