// The V8 flags kube-proxy-ts runs with, wherever it is started (the bin's shebang, the lab's proxies, the image's
// wrapper, the benchmark's children), so that what is measured is what runs.
//
// --max-semi-space-size=8: V8 lets the young generation grow to 16 MiB per semi-space when allocation is bursty,
// as a full sync is. Almost everything a full sync allocates lives on (the model and the planner's state), so a
// scavenge's cost is what survives, copied out of the young generation, and a small young generation pays it in
// many more scavenges: at 100,000 flat Services a 2 MiB cap made 3,066 scavenges (5.4 s) of a 12.8 s sync with no
// nft, 8 MiB 773 (2.6 s) of 9.3 s, for ≈ 85 MiB more peak RSS; at 10,000 Services ≈ 0.2 s less of our own time
// on a cold start for ≈ 12 MiB (`--trace-gc` on bench/workload.ts's cluster, and `npm run bench`).
export const AGENT_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=8'];
