// What the page knows (the server's snapshot, then each change it pushes) and when it draws: a change marks parts
// dirty, and one timer draws them all.
export const token = document.querySelector('meta[name="lab-token"]').content;
export const state = {
  lab: undefined,
  objects: new Map(),
  samples: {},
  syncs: [],
  rulesets: new Map(),
  experiments: [],
  runs: new Map(),
  rulesetNode: undefined,
};
// For the tests and the benchmark: how long drawing takes in this browser.
export const stats = { renders: 0, lastRenderMs: 0, maxRenderMs: 0, events: 0, snapshots: 0, maxPartMs: {} };
window.labWeb = { state, stats };

export function ofKind(kind) {
  const out = [];
  for (const o of state.objects.values()) if (o.kind === kind) out.push(o);
  return out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

/** IP → pod name and node, from the EndpointSlices (what the proxies read too). */
export function endpointOwners() {
  const m = new Map();
  for (const s of ofKind('EndpointSlice'))
    for (const e of s.endpoints) m.set(e.address, { pod: e.pod, node: e.node });
  return m;
}

export function latestSample(node) {
  const list = state.samples[node] ?? [];
  return list[list.length - 1];
}

export function windowStart() {
  return Date.now() - (state.lab?.windowMs ?? 300000);
}

const dirty = new Set();
let scheduled = false;
let draw = () => undefined;

/** Who draws: app.js, with the parts marked since the last time. */
export function onDraw(fn) {
  draw = fn;
}

export function mark(...parts) {
  for (const p of parts) dirty.add(p);
  if (scheduled) return;
  scheduled = true;
  // A timer, not requestAnimationFrame: a page in a background tab keeps its view current too.
  setTimeout(() => {
    scheduled = false;
    const now = new Set(dirty);
    dirty.clear();
    draw(now);
  }, 50);
}
