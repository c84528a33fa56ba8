// Runs test files inside a guest on Debian's kernel (packages/lab/src/vm/), so that the real-kernel suites prove
// each backend on a second kernel (Debian 12's 6.1) beside this machine's: one guest is booted, the test files run
// in it on Node's runner exactly as `npm test` runs them (tsx, the source condition), with KPTS_REQUIRE_KERNEL=1
// so that nothing skips silently, their output streams here as it is written, and the guest is always stopped.
//
//   npm run test:guest -- [--env K=V]… [--iptables legacy|nft] [--test-name-pattern RE] [--memory MiB] FILE…
//
// The guest has no network of its own (the suites make their namespaces inside it), `hostTmp` (tsx's cache under
// the host's /tmp is warm) and a read-write scratch directory that carries the run's output back as it grows: the
// control channel answers only when a command ends. `--iptables` points the guest's iptables alternatives (in its
// tmpfs overlay, never the host's) at one back end, so that the scenarios' iptables mode ("auto": the plain names)
// runs on legacy iptables or on iptables-nft.
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sweepGuests } from '../../packages/lab/src/vm/cleanup.js';
import { startGuest, type Guest, type GuestShare } from '../../packages/lab/src/vm/guest.js';

const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));

// Under TCG a Node.js process in the guest runs 6–25× slower than on the host, and each `node --import tsx` start
// (a pod server, a traffic client) costs ~10 s: the host's limits (10 minutes per test in scripts/test.mjs) become
// an hour here, and a whole run may take hours. These are ceilings that stop a wedged run, not expectations.
export const GUEST_TEST_TIMEOUT_MS = 60 * 60_000;
export const GUEST_RUN_TIMEOUT_MS = 4 * 60 * 60_000;
/** A tsx test file with namespaces and pod servers needs ~700 MiB of QEMU at -m 512; a suite wants room. */
export const GUEST_MEMORY_MIB = 1024;
/**
 * KPTS_TIMEOUT_SCALE in the guest: test/helpers/wait-for.ts multiplies its bounds by it (a traffic client that
 * the host starts in under a second starts in 10–30 s in a guest on a busy machine).
 */
export const GUEST_TIMEOUT_SCALE = 5;

export const IPTABLES_BACKENDS = ['legacy', 'nft'] as const;
export type IptablesBackend = (typeof IPTABLES_BACKENDS)[number];

export interface InGuestOptions {
  /** Test files under the repository (relative to the current directory, or absolute). */
  readonly files: readonly string[];
  /** Variables for the test run, beside KPTS_REQUIRE_KERNEL=1 (e.g. KPTS_DATAPLANE_BACKENDS). */
  readonly env?: Readonly<Record<string, string>>;
  /** Point the guest's iptables/ip6tables alternatives at this back end before the run. */
  readonly iptables?: IptablesBackend;
  /** Passed to node --test as --test-name-pattern. */
  readonly testNamePattern?: string;
  readonly memoryMiB?: number;
  /** The whole run's ceiling in the guest (the command is killed after it). */
  readonly timeoutMs?: number;
  /** Per-test ceiling (node --test-timeout). */
  readonly testTimeoutMs?: number;
  /** The guest's state directory's parent (default: a new directory under /tmp, removed at the end). */
  readonly stateRoot?: string;
  /** Called with the run's output as it grows (default: nothing; the CLI writes it to stdout). */
  readonly onOutput?: (text: string) => void;
}

export const quote = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;

/** The shell script that points iptables and ip6tables (with their -save/-restore slaves) at one back end. */
export function iptablesAlternativesScript(backend: IptablesBackend): string {
  return [
    `update-alternatives --quiet --set iptables /usr/sbin/iptables-${backend}`,
    `update-alternatives --quiet --set ip6tables /usr/sbin/ip6tables-${backend}`,
    'iptables --version',
  ].join(' && ');
}

/** The test command run in the guest (as scripts/test.mjs runs files on the host, with the guest's ceilings). */
export function guestTestArgv(options: InGuestOptions): string[] {
  return [
    process.execPath,
    '--import',
    'tsx',
    '--conditions=kpts-source',
    '--test',
    '--test-reporter=spec',
    `--test-timeout=${options.testTimeoutMs ?? GUEST_TEST_TIMEOUT_MS}`,
    // One virtual CPU: files in parallel would only share it.
    '--test-concurrency=1',
    ...(options.testNamePattern !== undefined ? [`--test-name-pattern=${options.testNamePattern}`] : []),
    ...options.files.map((f) => relative(REPO_ROOT, resolve(f))),
  ];
}

/** Follows a file that QEMU's 9p server writes on the host, handing each new piece to `onText`. */
function follow(path: string, onText: (text: string) => void): { stop: () => void } {
  let offset = 0;
  const poll = (): void => {
    if (!existsSync(path)) return;
    const buf = readFileSync(path);
    if (buf.length > offset) {
      onText(buf.subarray(offset).toString('utf8'));
      offset = buf.length;
    }
  };
  const timer = setInterval(poll, 500);
  return {
    stop: () => {
      clearInterval(timer);
      poll();
    },
  };
}

export interface TestRunResult {
  /** The test runner's exit status in the guest (137 when the run was killed at its ceiling). */
  readonly code: number;
  readonly output: string;
  /** The test run alone, without boot and stop. */
  readonly runMs: number;
  /** What the guest's iptables says it is, when `iptables` was given. */
  readonly iptablesVersion?: string;
}

export interface InGuestResult extends TestRunResult {
  /** `uname -r` in the guest. */
  readonly release: string;
  readonly bootMs: number;
  /** QEMU's resident memory after the run, in MiB. */
  readonly rssMiB: number;
}

/**
 * Boots a guest for test runs (no network, the host's /tmp showing through, a scratch directory for output), hands
 * it to `fn`, and always stops it and sweeps `stateRoot` (a start that failed halfway sweeps itself).
 */
export async function withTestGuest<T>(
  options: {
    readonly memoryMiB?: number;
    readonly cpus?: number;
    readonly shares?: readonly GuestShare[];
    readonly stateRoot?: string;
  },
  fn: (guest: Guest) => Promise<T>,
): Promise<T> {
  // Short: the guest's control socket path must fit a Unix socket address.
  const ownRoot = options.stateRoot === undefined;
  const stateRoot = options.stateRoot ?? mkdtempSync('/tmp/kpts-vm-');
  let guest: Guest | undefined;
  try {
    guest = await startGuest({
      stateDir: join(stateRoot, 'tg'),
      hostname: 'kpts-test',
      memoryMiB: options.memoryMiB ?? GUEST_MEMORY_MIB,
      ...(options.cpus !== undefined ? { cpus: options.cpus } : {}),
      ...(options.shares !== undefined ? { shares: options.shares } : {}),
      hostTmp: true,
      scratch: true,
    });
    return await fn(guest);
  } finally {
    await guest?.stop();
    await sweepGuests(stateRoot, { all: true });
    if (ownRoot) rmSync(stateRoot, { recursive: true, force: true });
  }
}

let runs = 0;

/** What runShellInGuest needs besides the command. */
export interface ShellRunOptions {
  readonly env?: Readonly<Record<string, string>>;
  readonly iptables?: IptablesBackend;
  readonly cwd?: string;
  readonly timeoutMs?: number;
  readonly onOutput?: (text: string) => void;
}

/**
 * Runs a shell command in a guest from withTestGuest(), its output (stdout and stderr) streaming to `onOutput` as
 * the guest writes it: the command writes to a file on the scratch share, which the host follows, because the
 * control channel answers only when a command ends. A failed command's result ends with the guest's kernel log.
 */
export async function runShellInGuest(
  guest: Guest,
  command: string,
  options: ShellRunOptions,
): Promise<TestRunResult> {
  let iptablesVersion: string | undefined;
  if (options.iptables !== undefined) {
    const r = await guest.run(iptablesAlternativesScript(options.iptables));
    if (r.code !== 0)
      throw new Error(`could not select iptables-${options.iptables} in the guest: ${r.stdout}${r.stderr}`);
    iptablesVersion = r.stdout.trim();
  }
  const name = `run-${++runs}.log`;
  let output = '';
  const tail = follow(join(guest.stateDir, 'scratch', name), (text) => {
    output += text;
    options.onOutput?.(text);
  });
  const started = Date.now();
  const r = await guest
    .run(`{ ${command}\n} >/kpts/scratch/${name} 2>&1 </dev/null`, {
      cwd: options.cwd ?? REPO_ROOT,
      env: { ...options.env },
      timeoutMs: options.timeoutMs ?? GUEST_RUN_TIMEOUT_MS,
    })
    .finally(() => tail.stop());
  if (r.code !== 0) {
    // What the guest's kernel said (an OOM kill, a module that would not load) is often the reason.
    const k = await guest.run('dmesg | tail -n 40; free -m');
    const text = `\n# in-guest: the run failed; the guest's kernel log and memory:\n${k.stdout}${k.stderr}`;
    output += text;
    options.onOutput?.(text);
  }
  return {
    code: r.code,
    output,
    runMs: Date.now() - started,
    ...(iptablesVersion !== undefined ? { iptablesVersion } : {}),
  };
}

/** Runs test files in a guest from withTestGuest(); its output streams to `onOutput` as the guest writes it. */
export function runTestFiles(
  guest: Guest,
  options: Omit<InGuestOptions, 'memoryMiB' | 'stateRoot'>,
): Promise<TestRunResult> {
  if (options.files.length === 0) return Promise.reject(new Error('no test files given'));
  const env = { KPTS_REQUIRE_KERNEL: '1', KPTS_TIMEOUT_SCALE: String(GUEST_TIMEOUT_SCALE), ...options.env };
  return runShellInGuest(guest, guestTestArgv(options).map(quote).join(' '), {
    env,
    ...(options.iptables !== undefined ? { iptables: options.iptables } : {}),
    ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
    ...(options.onOutput !== undefined ? { onOutput: options.onOutput } : {}),
  });
}

/** Boots a guest, runs the files in it, and stops it (also when the run fails or throws). */
export function runTestsInGuest(options: InGuestOptions): Promise<InGuestResult> {
  return withTestGuest(options, async (guest) => {
    const r = await runTestFiles(guest, options);
    return { ...r, release: guest.release, bootMs: guest.bootMs, rssMiB: Math.round(guest.rssKiB() / 1024) };
  });
}

/** `--env NAME=VALUE` into `env`. */
export function addEnvAssignment(env: Record<string, string>, kv: string): void {
  const eq = kv.indexOf('=');
  if (eq <= 0) throw new Error(`--env ${kv}: expected NAME=VALUE`);
  env[kv.slice(0, eq)] = kv.slice(eq + 1);
}

/** `--iptables B`, checked. */
export function iptablesBackendArg(b: string): IptablesBackend {
  if (!(IPTABLES_BACKENDS as readonly string[]).includes(b))
    throw new Error(`--iptables ${b}: expected ${IPTABLES_BACKENDS.join(' or ')}`);
  return b as IptablesBackend;
}

/** The npm script's command line: [--env K=V]… [--iptables B] [--test-name-pattern RE] [--memory MiB] FILE… */
export function parseInGuestArgs(argv: readonly string[]): InGuestOptions {
  const files: string[] = [];
  const env: Record<string, string> = {};
  let iptables: IptablesBackend | undefined;
  let testNamePattern: string | undefined;
  let memoryMiB: number | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const value = (): string => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${arg} needs a value`);
      return v;
    };
    if (arg === '--env') addEnvAssignment(env, value());
    else if (arg === '--iptables') iptables = iptablesBackendArg(value());
    else if (arg === '--test-name-pattern') testNamePattern = value();
    else if (arg === '--memory') memoryMiB = Number(value());
    else if (arg.startsWith('-')) throw new Error(`unknown flag ${arg}`);
    else files.push(arg);
  }
  return {
    files,
    env,
    ...(iptables !== undefined ? { iptables } : {}),
    ...(testNamePattern !== undefined ? { testNamePattern } : {}),
    ...(memoryMiB !== undefined ? { memoryMiB } : {}),
  };
}

/**
 * A state root for a command-line run's guest, swept on SIGINT/SIGTERM: QEMU dies with this process (setpriv
 * --pdeathsig), and the sweep removes what it leaves (its tap, namespace and directory) before the exit.
 */
export function stateRootSweptOnSignal(name: string): string {
  const stateRoot = mkdtempSync('/tmp/kpts-vm-');
  let interrupted = false;
  const onSignal = (): void => {
    if (interrupted) process.exit(130);
    interrupted = true;
    console.error(`\n${name}: interrupted; stopping the guest`);
    void sweepGuests(stateRoot, { all: true }).finally(() => {
      rmSync(stateRoot, { recursive: true, force: true });
      process.exit(130);
    });
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return stateRoot;
}

async function main(): Promise<number> {
  let options: InGuestOptions;
  try {
    options = parseInGuestArgs(process.argv.slice(2));
    if (options.files.length === 0) throw new Error('no test files given');
  } catch (e) {
    console.error(`in-guest: ${(e as Error).message}`);
    console.error(
      'usage: npm run test:guest -- [--env K=V]… [--iptables legacy|nft] [--test-name-pattern RE] [--memory MiB] FILE…',
    );
    return 2;
  }
  const stateRoot = stateRootSweptOnSignal('in-guest');
  console.log(`# in-guest: booting a guest for ${options.files.join(' ')}`);
  try {
    const r = await runTestsInGuest({
      ...options,
      stateRoot,
      onOutput: (text) => process.stdout.write(text),
    });
    console.log(
      `# in-guest: kernel ${r.release}${r.iptablesVersion ? `, ${r.iptablesVersion}` : ''}; boot ${r.bootMs} ms, ` +
        `run ${(r.runMs / 1000).toFixed(1)} s, QEMU RSS ${r.rssMiB} MiB; exit ${r.code}`,
    );
    return r.code;
  } finally {
    rmSync(stateRoot, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.exitCode = await main();
