// llm-agent-session view: the page. Hand-written, no build step, no dependency: ES modules
// the browser loads as they are (viewer/*.js, one concern each), this one the entry.
//
// Everything from a transcript is set as text (textContent), never as markup; the one
// exception is an assistant's Markdown, which the server sends as HTML it made without
// any markup from the transcript (view/markdown.py). The Content-Security-Policy allows
// these files and the style sheet only.
//
// A transcript is one virtual list over the whole file: the page holds a window of
// envelopes around the place shown (at most MAX_RENDERED elements, viewer/list.js), fetched
// from /api/window (viewer/windows.js). The document's scrollbar spans the whole file:
// dragging it maps its position to an envelope; the wheel and the keys move the list by
// pixels through the envelopes' measured heights (each with the gap above it), and the
// scrollbar is set to match when scrolling stops. Home and End go to the list's ends; at
// the end the list follows what is appended (viewer/follow.js). See docs/viewer.md.
//
// The reader and the shelf are imported when the page knows which it is (every module is
// preloaded at once: index.html), so that a transcript's first requests go out before
// the reader's modules have loaded (viewer/early.js).
import { firstRequests } from "./viewer/early.js";
import { transcriptOf } from "./viewer/links.js";

const link = transcriptOf(location.pathname);
if (link !== null) {
  const first = firstRequests(link, new URLSearchParams(location.search));
  import("./viewer/reader.js").then((reader) => reader.openReader(link, first));
} else {
  import("./viewer/shelf.js").then((shelf) => shelf.openShelf());
}
