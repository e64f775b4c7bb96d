// The open transcript's state: one object the reader's modules share (a page shows one
// transcript). What is cached, measured and drawn; where the list is (its anchor: an
// envelope and the pixels scrolled into it); the search; the generation of the file the
// follow last saw.

const EST = 140;              // height of an envelope not measured yet (px)

export const T = {};

export function startState(link) {
  Object.assign(T, {
    link, info: null, generation: -1, mode: "history", count: 0,
    cache: new Map(), heights: new Map(), nodes: new Map(), loading: new Set(), stale: new Set(),
    anchor: { index: 0, offset: 0 }, atEnd: false,
    lastY: 0, suppress: null, input: 0, idle: null, avg: EST, avgLater: null,
    hits: [], hitSet: new Set(), hitAt: -1, hitTotal: 0, searchDone: true, searchAbort: null, query: "",
    target: null, ready: {}, about: "", unremembered: false, folds: new Map(), early: null,
  });
}
