// The V8 flags kube-proxy-ts runs with, wherever it is started (the bin's shebang, the lab's proxies, the image's
// wrapper, the benchmark's children), so that what is measured is what runs.
//
// --max-semi-space-size=2: V8 lets the young generation grow to 16 MiB per semi-space (48 MiB reserved) when
// allocation is bursty, as a full sync is. A proxy keeps little short-lived garbage between syncs, so a 2 MiB cap
// trades a few more scavenges during a full sync for ~25 MiB less peak RSS at 10,000 Services (measured with
// `npm run bench`).
export const AGENT_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=2'];
