// The executor over libnftables in this process: the same NftCommandExecutor as for the `nft` binary, with its
// transactions applied through one long-lived libnftables context instead of a process per run. Same text in, same
// kernel state and the same error text out (nft's, located at the failing line); what goes is the fork and the
// socket teardown of every run (≈ 16 ms on these machines, whatever the transaction's size).
//
// Only transactions of up to LIBRARY_MAX_TEXT_BYTES go to the library; larger ones and every listing still run
// the `nft` command. nft's memory grows with what one run handles (≈ 240 MiB for a 100,000-operation cold-start
// chunk, ≈ 3.4 GiB to list a 100,000-Service flat table), and in this process it would stay: measured at 10,000
// flat Services, a cold start through the library peaked at 428 MiB against 166 MiB with the command, and was no
// faster, since for such a run nft's own work dwarfs the process's cost. A process gives all of it back at exit.
import type { CommandRunner } from '../command.js';
import { commandInvoker, NftCommandExecutor } from './executor.js';
import type { NftInvoker } from './executor.js';
import type { LibnftablesContext } from './libnftables.js';
import type { NftTableRef } from './serialize.js';

/** The largest transaction text (bytes) applied in-process: ≈ 10,000 element operations, ≈ 30 MiB of nft's. */
export const LIBRARY_MAX_TEXT_BYTES = 1 << 20;

/** NftInvoker over a libnftables context for small transactions, the `nft` command through `commands` otherwise. */
export function libraryInvoker(ctx: LibnftablesContext, commands: CommandRunner): NftInvoker {
  const command = commandInvoker(commands);
  return {
    applyText: (text, checkOnly) =>
      // UTF-8 takes at most 3 bytes per UTF-16 unit: only a text near the limit is counted exactly.
      text.length <= LIBRARY_MAX_TEXT_BYTES / 3 || Buffer.byteLength(text) <= LIBRARY_MAX_TEXT_BYTES
        ? ctx.runText(text, checkOnly)
        : command.applyText(text, checkOnly),
    listJson: (args, terse) => command.listJson(args, terse),
  };
}

/**
 * An executor for `ref` that owns one libnftables context (close() frees it and its netlink socket); what the
 * context does not take runs as `nft` through `commands`, which must run in this process's namespace too.
 */
export class NftLibraryExecutor extends NftCommandExecutor {
  readonly #ctx: LibnftablesContext;

  constructor(ref: NftTableRef, ctx: LibnftablesContext, commands: CommandRunner) {
    super(ref, libraryInvoker(ctx, commands));
    this.#ctx = ctx;
  }

  close(): void {
    this.#ctx.close();
  }
}
