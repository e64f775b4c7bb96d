// What the list shows: the whole history or the live conversation only (setMode starts the
// list again), and the transcript's summary in the status line.
import { $, fmtBytes, fmtInt, fmtTokens, status, usageWords } from "./dom.js";
import { render, sizeSpacer, syncScrollbar } from "./list.js";
import { T } from "./state.js";

export function setMode(mode) {
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

export function showInfo(info) {
  T.info = info;
  const v = info.verdict;
  const title = info.title || info.name;
  $("title").textContent = title;
  document.title = title + ": llm-agent-session view";
  const parts = info.preview
    ? ["the last " + fmtInt(info.count) + " envelopes of " + fmtBytes(info.size) + " (indexing the whole file…)"]
    : [fmtInt(info.count) + " envelopes", fmtBytes(info.size)];
  if (info.live !== null) parts.push(fmtInt(info.live) + " live messages");
  const u = info.tokens;
  if (u && u.usage) {
    parts.push("tokens " + fmtTokens(u.tokens) + " (" + usageWords(u.usage) + "; " +
      fmtInt(u.usage.responses) + " responses" + (u.ready ? "" : "; counting again…") + ")");
  } else if (u) {
    parts.push("counting the tokens…");
  }
  if (info.pending) parts.push(fmtInt(info.pending) + " pending (may or may not have run)");
  if (v) parts.push("load: " + v.text + (v.why ? " (" + v.why + ")" : ""));
  if (info.warnings) parts.push(fmtInt(info.warnings) + " lines skipped");
  if (!info.redacted) parts.push("secrets shown as they are (--no-redact)");
  else if (info.secrets === null) parts.push("looking for secrets…");
  else if (info.secrets) parts.push(fmtInt(info.secrets) + (info.secrets === 1 ? " secret" : " secrets") + " masked (reveal shows one)");
  if (!info.ready.history) parts.push("reading the history…");
  if (info.error) parts.push(info.error);
  if (info.note) parts.push("import: " + info.note);   // a Claude Code or Codex session's, imported again
  T.about = parts.join(" · ");
  status(T.about);
}
