// Masked secrets on the page: the server masks what the secret rules find as
// «redacted:RULE:FINGERPRINT» (docs/secrets.md); each such marker becomes a marked span with
// a "reveal" button, and a press asks /api/reveal (with the run's token, as every request)
// for that one secret, shown in its place until the envelope is drawn again. Nothing else
// of it is kept.
import { getJSON } from "./api.js";
import { el } from "./dom.js";
import { apiURL } from "./links.js";
import { T } from "./state.js";

const MARKER = /«redacted:([a-z0-9]+(?:-[a-z0-9]+)*):([0-9a-f]{12})»/g;

// Every marker in `node`'s text made a span with its button (before the search marks hits).
export function markSecrets(node) {
  const walker = document.createTreeWalker(node, NodeFilter.SHOW_TEXT);
  const found = [];
  while (walker.nextNode()) if (walker.currentNode.nodeValue.includes("«redacted:")) found.push(walker.currentNode);
  for (const t of found) {
    const text = t.nodeValue;
    const frag = document.createDocumentFragment();
    let last = 0;
    for (const m of text.matchAll(MARKER)) {
      frag.append(text.slice(last, m.index));
      const span = el("span", "redacted", m[0]);
      span.title = "a secret (" + m[1] + ") masked by the viewer";
      const b = el("button", "reveal", "reveal");
      b.type = "button"; b.dataset.reveal = m[2]; b.title = "show this one secret";
      span.append(b);
      frag.append(span);
      last = m.index + m[0].length;
    }
    frag.append(text.slice(last));
    t.replaceWith(frag);
  }
}

// The secret a reveal button's marker masks, asked for and set as text in its place: by
// its envelope (the server looks on the tool call cards the envelope shows too), or for a
// raw line, by that line's.
export async function reveal(button) {
  const line = button.closest("[data-i]");
  const art = button.closest("article");
  const where = line && line !== art ? { i: line.dataset.i } : { id: art.dataset.envelopeId };
  const got = await getJSON(apiURL("reveal", Object.assign({ t: T.link, fp: button.dataset.reveal }, where)));
  const shown = el("span", "revealed", got.secret);
  shown.title = got.rule + " " + got.fingerprint + ": shown on request";
  button.closest(".redacted").replaceWith(shown);
}
