// The compiled agent's first sync, on the host (in a network namespace made here) and in a guest on Debian's
// kernel, against the same API server and the same cluster: how long a kube-proxy-ts DaemonSet pod on a guest lab
// node takes from its start to its first full sync. Prints a table (docs/vm-nodes.md keeps one).
//
//   npm run build   # the agent runs from packages/agent/dist, as its package's bin
//   node --import tsx --conditions=kpts-source test/vm/agent-first-sync.ts \
//     [--sizes 1000,10000] [--layouts upstream,flat] [--where host,guest] [--memory MiB]
//
// One namespace holds the guest's tap (198.18.0.1/30; the guest is 198.18.0.2, the bench Node's address) and the
// API server: bench/api-server.ts in a child process (`ip netns exec`), holding bench/agent-workload.ts's cluster
// (N Services, each with one port and an EndpointSlice of 10 endpoints, and the Node) on port 6443. The host's
// agent runs in that namespace and reaches the server on 127.0.0.1; the guest's reaches it over the tap. Each
// agent is the package's bin under node with the flags a node passes (bench's agentFlags: nftables mode, the
// layout, JSON logs at -v=2), started by `sh -c 'date +%s%N >&2; exec node …'` so that the start and the agent's
// log records are read on one clock (the guest's own, in the guest). Columns: to its first log record (Node.js
// and module loading), to both lists done, to its first sync done; the agent's own time for that sync. After each
// run the agent gets SIGTERM and the namespace's (or the guest's) ruleset is flushed, so every first sync starts
// from an empty kernel. Before the first agent, `kube-proxy-ts --version` runs twice in each place: in a guest the
// first Node.js process to load the agent reads its modules over 9p cold (tens of seconds on a busy machine), and
// the table's agents then start warm, as every agent after the first on a guest node would.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { AGENT_NODE_FLAGS } from 'kube-proxy-ts/util/node-flags.js';
import type { NftablesLayoutName } from 'kube-proxy-ts/config/nftables-layout.js';
import { hostCommandRunner } from 'kube-proxy-ts/netfilter/command.js';
import { createNamespace, deleteNamespace } from '@kube-proxy-ts/netns/namespace.js';
import { agentMain, parseRecord, syncRecord, type AgentRecord } from '../../bench/agent-process.js';
import { BenchApiServer } from '../../bench/api-server.js';
import {
  agentFlags,
  API_ADDRESS,
  API_TOKEN,
  kubeconfig,
  nodeObject,
  PATHS,
  serviceObject,
  sliceObject,
} from '../../bench/agent-workload.js';
import { ENDPOINTS_PER_SERVICE } from '../../bench/measure.js';
import { startGuest, type Guest } from '../../packages/lab/src/vm/guest.js';
import { GUEST_SCRATCH_DIR } from '../../packages/lab/src/vm/init-script.js';

const HOST_SIDE = '198.18.0.1';
const GUEST_SIDE = '198.18.0.2'; // the bench Node's InternalIP: the guest's agent is that node
const PORT = 6443;
/** A first sync of 10,000 Services under TCG on a busy machine: minutes, not hours. */
const FIRST_SYNC_TIMEOUT_MS = 20 * 60_000;

type Where = 'host' | 'guest';

interface Options {
  readonly sizes: number[];
  readonly layouts: NftablesLayoutName[];
  readonly where: Where[];
  readonly memoryMiB: number;
}

export function parseArgs(argv: readonly string[]): Options {
  const o = {
    sizes: [1000, 10000],
    layouts: ['upstream', 'flat'],
    where: ['host', 'guest'],
    memoryMiB: 1024,
  };
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value] = [argv[i], argv[i + 1] ?? ''];
    if (flag === '--sizes') o.sizes = value.split(',').map(Number);
    else if (flag === '--layouts') o.layouts = value.split(',');
    else if (flag === '--where') o.where = value.split(',');
    else if (flag === '--memory') o.memoryMiB = Number(value);
    else throw new Error(`unknown argument ${flag}`);
  }
  if (o.sizes.some((n) => !Number.isInteger(n) || n < 1)) throw new Error('--sizes: positive integers');
  if (o.layouts.some((l) => l !== 'upstream' && l !== 'flat')) throw new Error('--layouts: upstream, flat');
  if (o.where.some((w) => w !== 'host' && w !== 'guest')) throw new Error('--where: host, guest');
  return o as Options;
}

interface Row {
  readonly where: Where;
  readonly layout: NftablesLayoutName;
  readonly services: number;
  readonly upMs: number;
  readonly listMs: number;
  readonly syncMs: number;
  readonly ownMs: number;
  readonly operations: number;
  readonly load: number;
}

/** The API server's child: `serve SIZE` in the namespace; says "listening", ends when its stdin closes. */
async function serve(size: number): Promise<void> {
  const api = new BenchApiServer(API_TOKEN);
  api.load(PATHS.nodes, [nodeObject()]);
  api.load(
    PATHS.services,
    Array.from({ length: size }, (_, i) => serviceObject(i)),
  );
  api.load(
    PATHS.endpointSlices,
    Array.from({ length: size }, (_, i) => sliceObject(i, ENDPOINTS_PER_SERVICE, 0)),
  );
  await api.listen('0.0.0.0', PORT);
  console.log('listening');
  process.stdin.resume();
  process.stdin.on('end', () => void api.close().then(() => process.exit(0)));
}

/** Starts the API server child in `namespace`; resolves once it listens, with a function that stops it. */
function startServer(namespace: string, size: number): Promise<() => void> {
  const self = new URL(import.meta.url).pathname;
  const args = ['--import', 'tsx', '--conditions=kpts-source', self, 'serve', String(size)];
  const child = spawn('ip', ['netns', 'exec', namespace, process.execPath, ...args], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  return new Promise((resolve, reject) => {
    child.stdout.setEncoding('utf8').on('data', (s: string) => {
      if (s.includes('listening')) resolve(() => child.kill('SIGKILL'));
    });
    child.once('close', (code) => reject(new Error(`the API server exited (${code})`)));
  });
}

/** An agent's stderr, line by line: the start (ns since the epoch, from `date`), then its JSON records. */
class AgentLog {
  startMs = NaN;
  readonly records: AgentRecord[] = [];
  private partial = '';
  private wake: (() => void) | undefined;
  tail: string[] = [];

  push(text: string): void {
    const lines = (this.partial + text).split('\n');
    this.partial = lines.pop() ?? '';
    for (const line of lines) {
      this.tail = [...this.tail.slice(-20), line];
      if (Number.isNaN(this.startMs) && /^\d{19}$/.test(line.trim()))
        this.startMs = Number(line.trim()) / 1e6;
      const r = parseRecord(line);
      if (r) this.records.push(r);
    }
    this.wake?.();
  }

  /** Resolves with the first record passing `test`; rejects when `ended` resolves first or after the timeout. */
  async until(test: (r: AgentRecord) => boolean, ended: Promise<unknown>): Promise<AgentRecord> {
    let gone = false;
    void ended.then(() => ((gone = true), this.wake?.()));
    const deadline = Date.now() + FIRST_SYNC_TIMEOUT_MS;
    const timer = setTimeout(() => this.wake?.(), FIRST_SYNC_TIMEOUT_MS);
    try {
      for (;;) {
        const found = this.records.find(test);
        if (found) return found;
        if (gone || Date.now() >= deadline) {
          throw new Error(
            `the agent ${gone ? 'exited' : 'timed out'} before its first sync:\n${this.tail.join('\n')}`,
          );
        }
        await new Promise<void>((resolve) => (this.wake = resolve));
      }
    } finally {
      clearTimeout(timer);
    }
  }
}

function row(
  where: Where,
  layout: NftablesLayoutName,
  services: number,
  log: AgentLog,
  done: AgentRecord,
): Row {
  const sync = syncRecord(done);
  if (!sync?.full) throw new Error(`the first sync was not full: ${JSON.stringify(done)}`);
  const listed = log.records.filter((r) => r.msg === 'listed').map((r) => r.ts);
  return {
    where,
    layout,
    services,
    upMs: (log.records[0]?.ts ?? NaN) - log.startMs,
    listMs: Math.max(...listed) - log.startMs,
    syncMs: done.ts - log.startMs,
    ownMs: sync.ms,
    operations: sync.operations,
    load: loadavg()[0] ?? NaN,
  };
}

const quote = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;

function agentScript(kubeconfigPath: string, layout: NftablesLayoutName): string {
  const argv = [
    process.execPath,
    ...AGENT_NODE_FLAGS,
    agentMain(),
    ...agentFlags(kubeconfigPath, layout, `${kubeconfigPath}.state`),
  ];
  return `date +%s%N >&2; exec ${argv.map(quote).join(' ')}`;
}

/** `kube-proxy-ts --version`'s wall time, measured where it runs: Node.js and the agent's modules loading. */
async function versionMs(place: Place, where: Where): Promise<number> {
  const argv = [process.execPath, ...AGENT_NODE_FLAGS, agentMain(), '--version'].map(quote).join(' ');
  const script = `s=$(date +%s%N); ${argv} >/dev/null || exit 1; echo $(( ($(date +%s%N) - s) / 1000000 ))`;
  const r =
    where === 'guest' && place.guest
      ? await place.guest.run(script)
      : await hostCommandRunner.run('sh', ['-c', script]);
  if (r.code !== 0) throw new Error(`kube-proxy-ts --version failed in the ${where}: ${r.stderr}`);
  return Number(r.stdout.trim());
}

/** Two `--version` runs per place, before any agent: the first reads the modules cold (in a guest, over 9p). */
async function warmUp(o: Options, place: Place): Promise<string> {
  const parts: string[] = [];
  for (const where of o.where) {
    const cold = await versionMs(place, where);
    const warm = await versionMs(place, where);
    parts.push(`${where}: ${(cold / 1000).toFixed(1)} s first, ${(warm / 1000).toFixed(1)} s second`);
  }
  return `kube-proxy-ts --version (node + the agent's modules): ${parts.join('; ')}`;
}

interface Place {
  readonly namespace: string;
  readonly guest: Guest | undefined;
  readonly kubeconfigs: Readonly<Record<Where, string>>;
}

async function onHost(place: Place, layout: NftablesLayoutName, size: number): Promise<Row> {
  const log = new AgentLog();
  const script = agentScript(place.kubeconfigs.host, layout);
  const child = spawn('ip', ['netns', 'exec', place.namespace, 'sh', '-c', script], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const ended = new Promise<void>((resolve) => child.once('close', () => resolve()));
  child.stderr.setEncoding('utf8').on('data', (s: string) => log.push(s));
  try {
    return row('host', layout, size, log, await log.until((r) => syncRecord(r) !== undefined, ended));
  } finally {
    child.kill('SIGTERM');
    await ended;
    await hostCommandRunner.run('ip', ['netns', 'exec', place.namespace, 'nft', 'flush', 'ruleset']);
  }
}

async function inGuest(guest: Guest, place: Place, layout: NftablesLayoutName, size: number): Promise<Row> {
  const log = new AgentLog();
  const proc = guest.spawn(agentScript(place.kubeconfigs.guest, layout), { cwd: '/work/main' });
  proc.onOutput((c) => c.stream === 'stderr' && log.push(c.text));
  try {
    return row('guest', layout, size, log, await log.until((r) => syncRecord(r) !== undefined, proc.exited));
  } finally {
    proc.kill('TERM');
    await proc.exited;
    await guest.run(['nft', 'flush', 'ruleset']);
  }
}

function table(rows: readonly Row[]): string {
  const s = (ms: number): string => (ms / 1000).toFixed(1);
  const lines = [
    '| where | layout | Services | first record (s) | lists done (s) | first sync done (s) | sync itself (s) | load |',
    '|---|---|---|---|---|---|---|---|',
  ];
  for (const r of rows) {
    lines.push(
      `| ${r.where} | ${r.layout} | ${r.services.toLocaleString('en-US')} | ${s(r.upMs)} | ${s(r.listMs)} | ` +
        `${s(r.syncMs)} | ${s(r.ownMs)} | ${r.load.toFixed(1)} |`,
    );
  }
  return lines.join('\n');
}

async function measure(o: Options, place: Place): Promise<Row[]> {
  const rows: Row[] = [];
  for (const size of o.sizes) {
    const stopServer = await startServer(place.namespace, size);
    try {
      for (const layout of o.layouts) {
        if (o.where.includes('host')) rows.push(await onHost(place, layout, size));
        if (place.guest) rows.push(await inGuest(place.guest, place, layout, size));
        console.error(`# done: ${size} Services, ${layout}`);
      }
    } finally {
      stopServer();
    }
  }
  return rows;
}

async function main(o: Options): Promise<void> {
  const prefix = `kpts${randomBytes(3).toString('hex')}`;
  const namespace = `${prefix}-fs`;
  const stateRoot = mkdtempSync('/tmp/kpts-vm-');
  const stateDir = join(stateRoot, 'g1');
  let guest: Guest | undefined;
  const cleanup = async (): Promise<void> => {
    await guest?.stop();
    await deleteNamespace(hostCommandRunner, namespace);
    rmSync(stateRoot, { recursive: true, force: true });
  };
  process.once('SIGINT', () => void cleanup().then(() => process.exit(130)));
  try {
    if (o.where.includes('guest')) {
      guest = await startGuest({
        stateDir,
        scratch: true,
        memoryMiB: o.memoryMiB,
        network: {
          namespace,
          createNamespace: true,
          tap: `${prefix}t`,
          guestAddress: `${GUEST_SIDE}/30`,
          hostAddress: `${HOST_SIDE}/30`,
        },
      });
      console.error(
        `# guest: ${guest.release}, boot ${(guest.bootMs / 1000).toFixed(1)} s, -m ${o.memoryMiB}`,
      );
    } else await createNamespace(hostCommandRunner, namespace);
    const scratch = guest ? join(stateDir, 'scratch') : stateRoot;
    writeFileSync(join(scratch, 'kubeconfig-host'), kubeconfig());
    writeFileSync(
      join(scratch, 'kubeconfig-guest'),
      kubeconfig().replace(API_ADDRESS, `${HOST_SIDE}:${PORT}`),
    );
    const kubeconfigs = {
      host: join(scratch, 'kubeconfig-host'),
      guest: `${GUEST_SCRATCH_DIR}/kubeconfig-guest`,
    };
    const loadBefore = loadavg().map((l) => l.toFixed(1));
    const place = { namespace, guest, kubeconfigs };
    const warm = await warmUp(o, place);
    const rows = await measure(o, place);
    console.log(table(rows));
    console.log(`\n${warm}`);
    console.log(
      `load average before: ${loadBefore.join(' ')}; after: ${loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')}` + (guest ? `; guest boot ${(guest.bootMs / 1000).toFixed(1)} s (${guest.release})` : ''),
    );
  } finally {
    await cleanup();
  }
}

if (process.argv[2] === 'serve') await serve(Number(process.argv[3]));
else await main(parseArgs(process.argv.slice(2)));
