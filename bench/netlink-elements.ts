// Measures the netlink element writer against `nft -f` on the flat layout's cold start (bench/netlink-workload.ts:
// 10,000 bench Services × 10 endpoints is 126,002 element operations): encoding the batch, applying it, and
// listing the biggest map back, beside `nft -f` of the same operations' text (the executor's, serializeTransaction)
// and `nft --json list`. Numbers, not pass/fail; not part of `npm run bench` (yet).
//
//   node --import tsx bench/netlink-elements.ts [--services N] [--endpoints E] [--repeats R]
//
// As root it makes a network namespace, runs itself inside it (the writer's socket is in its process's namespace),
// and deletes it; otherwise it measures encoding only. Each kernel round starts from an empty table with the
// setup (table, chains, rules, set declarations) applied by nft, then times one way of writing the elements.
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { hostCommandRunner } from 'kube-proxy-ts/netfilter/command.js';
import { encodeElementBatch } from 'kube-proxy-ts/netfilter/nft/netlink/encode.js';
import { NetlinkElements } from 'kube-proxy-ts/netfilter/nft/netlink/elements.js';
import { serializeOperations, serializeTransaction } from 'kube-proxy-ts/netfilter/nft/serialize.js';
import { median } from './measure.js';
import { BENCH_REF, flatColdStart } from './netlink-workload.js';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const v = i >= 0 ? Number(process.argv[i + 1]) : fallback;
  if (!Number.isInteger(v) || v <= 0) throw new Error(`--${name} must be a positive integer`);
  return v;
}

const services = arg('services', 10_000);
const endpoints = arg('endpoints', 10);
const repeats = arg('repeats', 5);
const inside = process.argv.includes('--inside');
const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;

if (isRoot && !inside) {
  // Run again inside a namespace of our own, so that nothing of this touches the host's tables.
  const ns = `kpts${randomBytes(3).toString('hex')}-netlink-bench`;
  execFileSync('ip', ['netns', 'add', ns]);
  try {
    const r = spawnSync(
      'ip',
      ['netns', 'exec', ns, process.execPath, ...process.execArgv, ...process.argv.slice(1), '--inside'],
      { stdio: 'inherit' },
    );
    process.exitCode = r.status ?? 1;
  } finally {
    execFileSync('ip', ['netns', 'del', ns]);
  }
} else {
  await measure();
}

function ms(x: number): string {
  return `${x.toFixed(1)} ms`;
}

async function nft(args: string[], stdin?: string): Promise<{ ms: number; stdout: string }> {
  const t0 = performance.now();
  const r = await hostCommandRunner.run('nft', args, stdin !== undefined ? { stdin } : {});
  const t = performance.now() - t0;
  if (r.code !== 0) throw new Error(`nft ${args.join(' ')}: ${r.stderr.slice(0, 300)}`);
  return { ms: t, stdout: r.stdout };
}

async function measure(): Promise<void> {
  const cold = await flatColdStart(services, endpoints);
  console.log(
    `flat cold start, ${services} Services × ${endpoints} endpoints: ${cold.elements.length} element ` +
      `operations for the writer, ${cold.setup.length} for nft`,
  );

  // Encoding: the first call in this process (cold code), then warm ones.
  const encodes: number[] = [];
  let bytes = 0;
  let messages = 0;
  for (let r = 0; r <= repeats; r++) {
    const t0 = performance.now();
    const e = encodeElementBatch(BENCH_REF, cold.elements, cold.schemas, 1);
    encodes.push(performance.now() - t0);
    if ('reason' in e) throw new Error(e.reason);
    bytes = e.bytes.length;
    messages = e.messages.length;
  }
  const texts: number[] = [];
  let textBytes = 0;
  for (let r = 0; r <= repeats; r++) {
    const t0 = performance.now();
    textBytes = serializeTransaction(BENCH_REF, cold.elements).text.length;
    texts.push(performance.now() - t0);
  }
  console.log(
    `encode: first ${ms(encodes[0] ?? 0)}, warm median ${ms(median(encodes.slice(1)))} ` +
      `(${(bytes / 2 ** 20).toFixed(1)} MiB, ${messages} messages); ` +
      `nft text (serializeTransaction): first ${ms(texts[0] ?? 0)}, warm median ${ms(median(texts.slice(1)))} ` +
      `(${(textBytes / 2 ** 20).toFixed(1)} MiB)`,
  );
  if (!inside) {
    console.log('not root: kernel rounds skipped');
    return;
  }

  const writer = NetlinkElements.open();
  if ('error' in writer) throw new Error(writer.error);
  const setupText = serializeOperations(BENCH_REF, cold.setup);
  const elementText = serializeTransaction(BENCH_REF, cold.elements).text;
  const fresh = async (): Promise<void> => {
    await nft(['-f', '-'], 'add table ip kube-proxy\ndelete table ip kube-proxy\n');
    // nf_tables frees a large table in a worker after the commit; let it finish before the next round.
    await sleep(1000);
    await nft(['-f', '-'], setupText);
  };
  const viaNetlink: number[] = [];
  const viaNetlinkKernel: number[] = [];
  const viaNft: number[] = [];
  let netlinkTable = '';
  let nftTable = '';
  for (let r = 0; r < repeats; r++) {
    await fresh();
    const t0 = performance.now();
    const applied = await writer.apply(BENCH_REF, cold.elements, cold.schemas);
    viaNetlink.push(performance.now() - t0);
    if (!applied.ok) throw new Error(applied.error.message);
    viaNetlinkKernel.push(applied.stats.kernelMs);
    if (r === 0) netlinkTable = (await nft(['list', 'table', 'ip', 'kube-proxy'])).stdout;
    await fresh();
    viaNft.push((await nft(['-f', '-'], elementText)).ms);
    if (r === 0) nftTable = (await nft(['list', 'table', 'ip', 'kube-proxy'])).stdout;
  }
  console.log(
    `apply: netlink median ${ms(median(viaNetlink))} (of it the kernel's send and answers ` +
      `${ms(median(viaNetlinkKernel))}), nft -f median ${ms(median(viaNft))}; ` +
      `same table: ${netlinkTable === nftTable && netlinkTable.length > 0}`,
  );

  // Listing the biggest map back: netlink (decoded to our text) and nft --json (JSON text only, not parsed).
  const biggest = [...cold.schemas].find(([name]) => name === 'endpoints-tcp');
  if (biggest) {
    const lists: number[] = [];
    const jsons: number[] = [];
    let count = 0;
    for (let r = 0; r < repeats; r++) {
      const t0 = performance.now();
      const l = await writer.list(BENCH_REF, biggest[0], biggest[1]);
      lists.push(performance.now() - t0);
      if (!l.ok) throw new Error(l.error.message);
      count = l.elements.length;
      jsons.push((await nft(['--json', 'list', 'map', 'ip', 'kube-proxy', biggest[0]])).ms);
    }
    console.log(
      `list ${biggest[0]} (${count} elements): netlink median ${ms(median(lists))}, ` +
        `nft --json list map median ${ms(median(jsons))}`,
    );
  }
  writer.close();
}
