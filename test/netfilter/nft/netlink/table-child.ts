// Run by table-kernel.test.ts as `ip netns exec NS node --import tsx …/table-child.ts [--measure] FAMILY:TABLE…`:
// this process lives inside the test's namespace, so its netlink socket reads that namespace's tables and nothing
// else. For each table: the netlink listing, what the nft executor lists (`nft --json --terse list table`, parsed
// by parseTableJson) or the error it rejects with, nft's text listing, and what NftElementsExecutor.list() gives
// over the nft executor. With --measure: also how long each listing takes, a few times over. Prints one JSON line.
import { execFileSync, spawnSync } from 'node:child_process';
import { hostCommandRunner } from '../../../../packages/agent/src/netfilter/command.js';
import { NftElementsExecutor } from '../../../../packages/agent/src/netfilter/nft/elements-executor.js';
import type { ElementsExecutorCounts } from '../../../../packages/agent/src/netfilter/nft/elements-executor.js';
import { NftError } from '../../../../packages/agent/src/netfilter/nft/errors.js';
import type { NftListing } from '../../../../packages/agent/src/netfilter/nft/executor.js';
import { NftCommandExecutor } from '../../../../packages/agent/src/netfilter/nft/executor.js';
import type { NetlinkTableResult } from '../../../../packages/agent/src/netfilter/nft/netlink/elements.js';
import { NetlinkElements } from '../../../../packages/agent/src/netfilter/nft/netlink/elements.js';
import type { NftFamily } from '../../../../packages/agent/src/netfilter/nft/objects.js';

/** A listing, or the code and message of the NftError it was refused with. */
export type ListedOrRefused =
  { readonly listing: NftListing } | { readonly code: string; readonly message: string };

export interface TableReport {
  readonly family: NftFamily;
  readonly table: string;
  readonly netlink: NetlinkTableResult;
  readonly nft: ListedOrRefused;
  /** `nft list table` (text), or '' when nft refused. */
  readonly text: string;
  readonly executor: ListedOrRefused;
  readonly counts: ElementsExecutorCounts;
  readonly fallback?: string;
  /** With --measure: milliseconds per run of each listing. */
  readonly timings?: {
    readonly netlinkMs: number[];
    readonly nftMs: number[];
    /** nft's peak memory for the same listing (GNU time's %M), when /usr/bin/time is there. */
    readonly nftMaxRssKiB?: number;
  };
}

async function listed(list: () => Promise<NftListing>): Promise<ListedOrRefused> {
  try {
    return { listing: await list() };
  } catch (e) {
    if (e instanceof NftError) return { code: e.code, message: e.message };
    throw e;
  }
}

const args = process.argv.slice(2);
const measure = args[0] === '--measure';
const refs = (measure ? args.slice(1) : args).map((a) => {
  const [family, table] = a.split(':') as [NftFamily, string];
  return { family, table };
});

const netlink = NetlinkElements.open();
if ('error' in netlink) {
  process.stdout.write(JSON.stringify({ error: netlink.error }) + '\n');
  process.exit(2);
}
const reports: TableReport[] = [];
for (const ref of refs) {
  const nftExecutor = new NftCommandExecutor(ref, hostCommandRunner);
  const result = await netlink.listTable(ref);
  const nft = await listed(() => nftExecutor.list());
  let text = '';
  try {
    text = execFileSync('nft', ['list', 'table', ref.family, ref.table], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      maxBuffer: 1 << 30,
    });
  } catch {
    // The nft side's error is in `nft`.
  }
  // The elements executor over the nft executor, sharing this socket (it is not closed here: the socket is).
  const elements = new NftElementsExecutor(nftExecutor, netlink);
  const executor = await listed(() => elements.list());
  let timings: TableReport['timings'];
  if (measure) {
    const netlinkMs: number[] = [];
    const nftMs: number[] = [];
    for (let i = 0; i < 3; i++) {
      let t = performance.now();
      await netlink.listTable(ref);
      netlinkMs.push(performance.now() - t);
      t = performance.now();
      await nftExecutor.list();
      nftMs.push(performance.now() - t);
    }
    let nftMaxRssKiB: number | undefined;
    try {
      const r = spawnSync(
        '/usr/bin/time',
        ['-f', '%M', 'nft', '--json', '--terse', 'list', 'table', ref.family, ref.table],
        { encoding: 'utf8', stdio: ['ignore', 'ignore', 'pipe'] },
      );
      const kib = Number(r.stderr.trim().split('\n').pop());
      if (r.status === 0 && Number.isFinite(kib)) nftMaxRssKiB = kib;
    } catch {
      // No GNU time: no memory figure.
    }
    timings = { netlinkMs, nftMs, ...(nftMaxRssKiB !== undefined ? { nftMaxRssKiB } : {}) };
  }
  reports.push({
    ...ref,
    netlink: result,
    nft,
    text,
    executor,
    counts: elements.counts,
    ...(elements.listingFallback !== undefined ? { fallback: elements.listingFallback } : {}),
    ...(timings ? { timings } : {}),
  });
}
netlink.close();
process.stdout.write(JSON.stringify({ reports }) + '\n');
