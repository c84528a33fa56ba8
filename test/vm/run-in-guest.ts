// Runs one shell command inside a guest on Debian's kernel (packages/lab/src/vm/), for the work this machine's
// kernel cannot host: a whole lab whose nodes need IP_VS (scripts/soak-remedies.sh), a manual look at IPVS. The
// guest is the test guest of in-guest.ts (the host's programs over 9p, /tmp showing through, a scratch share that
// carries the output back as it grows); `--share DIR` exports a host directory read-write at the same path, for
// what the command writes that should outlive the guest. The command's output streams here; the exit status is
// the command's; the guest is always stopped (^C included).
//
//   npm run guest:run -- [--cpus N] [--memory MiB] [--share DIR]… [--env K=V]… [--iptables legacy|nft] -- CMD…
import { mkdirSync, rmSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { GuestShare } from '../../packages/lab/src/vm/guest.js';
import {
  addEnvAssignment,
  iptablesBackendArg,
  quote,
  runShellInGuest,
  stateRootSweptOnSignal,
  withTestGuest,
  type IptablesBackend,
} from './in-guest.js';

export interface GuestRunArgs {
  readonly command: string;
  readonly cpus?: number;
  readonly memoryMiB?: number;
  readonly shares: readonly GuestShare[];
  readonly env: Readonly<Record<string, string>>;
  readonly iptables?: IptablesBackend;
}

const USAGE =
  'usage: npm run guest:run -- [--cpus N] [--memory MiB] [--share DIR]… [--env K=V]… [--iptables legacy|nft] -- CMD…';

function positiveInteger(flag: string, text: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${flag} ${text}: expected a whole number above 0`);
  return n;
}

/** The command line: flags, then `--` and the command (its words quoted for the guest's shell). */
export function parseGuestRunArgs(argv: readonly string[]): GuestRunArgs {
  const env: Record<string, string> = {};
  const shares: GuestShare[] = [];
  let cpus: number | undefined;
  let memoryMiB: number | undefined;
  let iptables: IptablesBackend | undefined;
  let i = 0;
  for (; i < argv.length && argv[i] !== '--'; i++) {
    const arg = argv[i]!;
    const value = (): string => {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${arg} needs a value`);
      return v;
    };
    if (arg === '--cpus') cpus = positiveInteger(arg, value());
    else if (arg === '--memory') memoryMiB = positiveInteger(arg, value());
    else if (arg === '--share') shares.push({ hostPath: resolve(value()) });
    else if (arg === '--env') addEnvAssignment(env, value());
    else if (arg === '--iptables') iptables = iptablesBackendArg(value());
    else throw new Error(`unexpected ${arg} (flags first, then -- and the command)`);
  }
  const words = argv.slice(i + 1);
  if (words.length === 0) throw new Error('no command given (after --)');
  return {
    command: words.map(quote).join(' '),
    shares,
    env,
    ...(cpus !== undefined ? { cpus } : {}),
    ...(memoryMiB !== undefined ? { memoryMiB } : {}),
    ...(iptables !== undefined ? { iptables } : {}),
  };
}

async function main(): Promise<number> {
  let args: GuestRunArgs;
  try {
    args = parseGuestRunArgs(process.argv.slice(2));
  } catch (e) {
    console.error(`guest:run: ${(e as Error).message}`);
    console.error(USAGE);
    return 2;
  }
  for (const s of args.shares) mkdirSync(s.hostPath, { recursive: true });
  const stateRoot = stateRootSweptOnSignal('guest:run');
  console.log(`# guest:run: booting a guest for ${args.command}`);
  try {
    return await withTestGuest(
      {
        stateRoot,
        shares: args.shares,
        ...(args.cpus !== undefined ? { cpus: args.cpus } : {}),
        ...(args.memoryMiB !== undefined ? { memoryMiB: args.memoryMiB } : {}),
      },
      async (guest) => {
        const r = await runShellInGuest(guest, args.command, {
          env: args.env,
          ...(args.iptables !== undefined ? { iptables: args.iptables } : {}),
          onOutput: (text) => process.stdout.write(text),
        });
        console.log(
          `# guest:run: kernel ${guest.release}; boot ${guest.bootMs} ms, run ${(r.runMs / 1000).toFixed(1)} s, ` +
            `QEMU RSS ${Math.round(guest.rssKiB() / 1024)} MiB; exit ${r.code}`,
        );
        return r.code;
      },
    );
  } finally {
    rmSync(stateRoot, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.exitCode = await main();
