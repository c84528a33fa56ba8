// Which way nftables mode reaches nft, decided once per process: in this process (libnftables, one long-lived
// context per executor, no process per run, and nf_tables netlink for element-only transactions and set
// listings: elements-executor.ts) or the `nft` binary through a CommandRunner.
//
// libnftables talks to the kernel of the namespace this process runs in. It is used only when the commands would
// run there too, i.e. the runner is hostCommandRunner itself: an agent on its node, a lab proxy started inside its
// node's namespace. A runner that wraps `ip netns exec` (tests, the bench's runner process, the lab's tools), or
// any other wrapper, keeps the binary, so that nothing is ever written to the namespace this process happens to
// be in by mistake.
import type { NftExecutorChoice } from '../../config/nft-executor.js';
import type { Logger } from '../../util/logger.js';
import type { CommandRunner } from '../command.js';
import { hostCommandRunner } from '../command.js';
import type { NftExecutor } from './executor.js';
import { NftCommandExecutor } from './executor.js';
import type { Libnftables } from './libnftables.js';
import { loadLibnftables } from './libnftables.js';
import { NftElementsExecutor } from './elements-executor.js';
import { NftLibraryExecutor } from './library-executor.js';
import { NetlinkElements } from './netlink/elements.js';
import type { NftTableRef } from './serialize.js';

/** The decision, and how to make an executor for a table by it. */
export interface NftExecutors {
  readonly kind: 'cli' | 'library';
  /** Why this kind, for the one log line that says it (and for /configz). */
  readonly reason: string;
  /** `logger` hears what the executor decides on its own (a listing nft had to answer). */
  create(ref: NftTableRef, logger?: Logger): NftExecutor;
}

let loaded: Libnftables | { error: string } | undefined;
/** libnftables is loaded at most once per process, and only when asked for. */
function library(): Libnftables | { error: string } {
  loaded ??= loadLibnftables();
  return loaded;
}

function cli(commands: CommandRunner, reason: string): NftExecutors {
  return { kind: 'cli', reason, create: (ref) => new NftCommandExecutor(ref, commands) };
}

/**
 * Decides. With `choice` 'library', a runner that is not this process's own namespace or a library that does not
 * load is an error value (the caller refuses to start); with 'auto' it falls back to the binary, saying why.
 */
export function chooseNftExecutors(
  choice: NftExecutorChoice,
  commands: CommandRunner,
  load: () => Libnftables | { error: string } = library,
  openElements: () => NetlinkElements | { error: string } = () => NetlinkElements.open(),
): NftExecutors | { error: string } {
  if (choice === 'cli') return cli(commands, 'asked for (--nft-executor=cli)');
  if (commands !== hostCommandRunner) {
    const why = 'nft runs through a wrapped command runner (another network namespace), not in this process';
    return choice === 'library' ? { error: `--nft-executor=library: ${why}` } : cli(commands, why);
  }
  const lib = load();
  if ('error' in lib) {
    return choice === 'library'
      ? { error: `--nft-executor=library: ${lib.error}` }
      : cli(commands, `${lib.error}; using the nft command instead`);
  }
  // Element-only transactions (most partial syncs, a cold start's chunks) and set listings go over nf_tables
  // netlink from this process as well, when its socket opens (it is this process's namespace, as the library's).
  const probe = openElements();
  if ('error' in probe) {
    return {
      kind: 'library',
      reason: `${lib.soname} in this process, one context per table (element writes through nft too: ${probe.error})`,
      create: (ref) => new NftLibraryExecutor(ref, lib.newContext(), commands),
    };
  }
  probe.close();
  return {
    kind: 'library',
    reason: `${lib.soname} in this process, one context per table; element-only transactions and set listings over nf_tables netlink`,
    create: (ref, logger) => {
      const library = new NftLibraryExecutor(ref, lib.newContext(), commands);
      const elements = openElements();
      return 'error' in elements ? library : new NftElementsExecutor(library, elements, logger);
    },
  };
}
