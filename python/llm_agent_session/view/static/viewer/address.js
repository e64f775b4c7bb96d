// The place shown, kept in the page's address (?at=ID): a deep link that survives a reload.
import { placeAddress } from "./links.js";
import { T } from "./state.js";
import { key } from "./windows.js";

export function remember() {
  const item = T.cache.get(key(T.anchor.index));
  // Not fetched yet (a jump far away): the address is set when it arrives (render).
  T.unremembered = !item;
  if (!item) return;
  history.replaceState(null, "", placeAddress(item.id, T.mode));
}
