// Which endpoint sits in which slot of a frontend's `endpoints` entries. A dispatch chain picks `numgen random mod
// N`, so the slots of a view must be exactly 0…N-1. Slots are kept stable across syncs so that a one-endpoint
// change rewrites one or two entries instead of every entry after it: a surviving endpoint keeps its slot, a
// removed endpoint's hole is filled by the endpoint in the highest slot ("move the last into the hole"), and new
// endpoints fill the remaining holes and then append.

/** An endpoint's identity in a slot list: `ip . port`, plus `#k` for the k-th repeat of the same address. */
export function slotIdentities(
  endpoints: readonly { readonly ip: string; readonly port: number }[],
): string[] {
  const seen = new Map<string, number>();
  return endpoints.map((ep) => {
    // Joined, not a template: V8 keeps a template's result as a tree of its pieces (about twice the memory of the
    // text), and at 100,000 Services × 10 the planner keeps a million of these.
    const id = [ep.ip, ep.port].join(' . ');
    const n = seen.get(id) ?? 0;
    seen.set(id, n + 1);
    return n === 0 ? id : `${id}#${n}`;
  });
}

/** The map value of a slot identity (`ip . port` fields). */
export function slotValue(identity: string): string[] {
  const hash = identity.indexOf('#');
  return (hash < 0 ? identity : identity.slice(0, hash)).split(' . ');
}

/**
 * The slot list for `current` (identities, in the model's order) given the `previous` one: survivors in slots
 * below the new count stay; holes are filled first by survivors from slots past the new count, highest slot first,
 * then by new endpoints in the model's order.
 */
export function assignSlots(previous: readonly string[], current: readonly string[]): string[] {
  const n = current.length;
  if (previous.length === 0) return [...current];
  const wanted = new Set(current);
  const slots: (string | undefined)[] = new Array<string | undefined>(n);
  const placed = new Set<string>();
  const movers: string[] = [];
  for (let i = previous.length - 1; i >= 0; i--) {
    const id = previous[i] as string;
    if (!wanted.has(id)) continue;
    if (i < n) {
      slots[i] = id;
      placed.add(id);
    } else movers.push(id);
  }
  const fill: string[] = [...movers];
  for (const id of movers) placed.add(id);
  for (const id of current) if (!placed.has(id)) fill.push(id);
  let next = 0;
  for (let i = 0; i < n; i++) {
    if (slots[i] === undefined) slots[i] = fill[next++];
  }
  return slots as string[];
}
