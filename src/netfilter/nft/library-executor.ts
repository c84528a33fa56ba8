// The executor over libnftables in this process: the same NftCommandExecutor as for the `nft` binary, with nft
// reached through one long-lived libnftables context instead of a process per run. Same text in, same kernel state
// and the same error text out (nft's, located at the failing line); what goes is the fork and the socket teardown
// of every run.
import { NftCommandExecutor } from './executor.js';
import type { NftInvoker } from './executor.js';
import type { LibnftablesContext } from './libnftables.js';
import type { NftTableRef } from './serialize.js';

/** NftInvoker over a libnftables context: `nft -f` is a run of the text, `nft --json list …` a command line. */
export function libraryInvoker(ctx: LibnftablesContext): NftInvoker {
  return {
    applyText: (text, checkOnly) => ctx.runText(text, checkOnly),
    // The arguments are the executor's own (verbs, family, our table's and sets' names): no quoting needed.
    listJson: (args, terse) => ctx.runCommand(args.join(' '), { json: true, terse }),
  };
}

/** An executor for `ref` that owns one libnftables context; close() frees it (its netlink socket). */
export class NftLibraryExecutor extends NftCommandExecutor {
  readonly #ctx: LibnftablesContext;

  constructor(ref: NftTableRef, ctx: LibnftablesContext) {
    super(ref, libraryInvoker(ctx));
    this.#ctx = ctx;
  }

  close(): void {
    this.#ctx.close();
  }
}
