// The V8 flags kube-proxy-ts runs with, wherever it is started (the bin's shebang, the lab's proxies, the image's
// wrapper, the benchmark's children), so that what is measured is what runs. All three are about the same shape
// of work: a full sync builds the agent's whole state at once (at 100,000 flat Services × 10 endpoints ≈ 540 MiB
// that lives on), among a similar amount of short-lived garbage.
//
// --max-semi-space-size=8: V8 lets the young generation grow to 16 MiB per semi-space when allocation is bursty,
// as a full sync is. Almost everything a full sync allocates lives on (the model and the planner's state), so a
// scavenge's cost is what survives, copied out of the young generation, and a small young generation pays it in
// many more scavenges: at 100,000 flat Services a 2 MiB cap made 3,066 scavenges (5.4 s) of a 12.8 s sync with no
// nft, 8 MiB 773 (2.6 s) of 9.3 s, for ≈ 85 MiB more peak RSS; at 10,000 Services ≈ 0.2 s less of our own time
// on a cold start for ≈ 12 MiB (`--trace-gc` on bench/workload.ts's cluster, and `npm run bench`).
//
// --no-allocation-site-pretenuring: V8 watches which allocation sites' objects survive and, past a rate, makes
// those sites allocate straight into the old generation. During a cold start it did so for sites whose objects
// die within milliseconds (the element operations of the transactions written over netlink), and the old
// generation then grew by every one of them: ≈ 230 MiB at 100,000 flat Services, in some runs (the peak RSS
// went between ≈ 980 and ≈ 1,200 MiB from run to run). Without it that growth is gone, at no measurable cost in
// time at 10,000 or 100,000 (`--trace-gc` and a heap sampling profile of bench/workload.ts's cluster).
//
// --heap-growing-percent=50: after a full collection V8 lets the heap grow to a multiple of what survived before
// the next one, up to 4× when collections are slow next to allocation, as in a cold start. The agent's heap
// grows in one burst and then stays: at 100,000 flat Services the last collection of the cold start came at
// ≈ 250 MiB live, and the heap then grew to ≈ 820 MiB (live ≈ 540) with no other. At 1.5× the cold start peaks at
// ≈ 680 MiB RSS instead of ≈ 910, in the same time (runs of 10.5–12.4 s against 11.3–11.6 s; at 10,000 Services
// 1.2–1.4 s either way). In the steady state a collection is due only after the heap grew by half.
export const AGENT_NODE_FLAGS: readonly string[] = [
  '--max-semi-space-size=8',
  '--no-allocation-site-pretenuring',
  '--heap-growing-percent=50',
];
