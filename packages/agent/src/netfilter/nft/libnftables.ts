// libnftables (the library inside the `nft` binary) called in this process through koffi, for the in-process
// executor (library-executor.ts). One context keeps one netlink socket open for its whole life: an `nft` process
// pays a fork and, at exit, the kernel releasing its socket (≈ 10 ms of a ≈ 16 ms run on these machines), which a
// one-endpoint change otherwise waits for every time.
//
// The socket lives in the network namespace of this process. A context is only right when the rules belong in
// this process's own namespace (the agent on its node, a lab proxy inside its node's namespace); who may use one
// is decided in choose-executor.ts, nowhere else.
import { closeSync, writeSync } from 'node:fs';
import { callAsync, cFunction, loadKoffi } from './koffi.js';
import type { CFunction } from './koffi.js';
import { errorMessage } from '../../util/error-message.js';

/** What one libnftables call gave back: nft's exit status (0 ok, 1 failed, as the binary's), stdout, stderr. */
export interface LibnftablesResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** One nft context: a netlink socket and nft's cache, used by one call at a time. */
export interface LibnftablesContext {
  /** `nft [-c] -f FILE` of `text`: a transaction (checkOnly: parsed and checked against the kernel, not applied). */
  runText(text: string, checkOnly: boolean): Promise<LibnftablesResult>;
  /** Frees the context (its socket). Later calls reject. */
  close(): void;
}

export interface Libnftables {
  /** The soname that was loaded, for logs. */
  readonly soname: string;
  newContext(): LibnftablesContext;
}

export const LIBNFTABLES_SONAME = 'libnftables.so.1';

// libnftables.h: nft_ctx_new's only flag value.
const NFT_CTX_DEFAULT = 0;
// memfd_create(2)'s MFD_CLOEXEC.
const MFD_CLOEXEC = 1;

/**
 * Stack for koffi's calls on its worker threads. koffi runs the C function on a stack of its own (128 KiB by
 * default); nft keeps a 64 KiB + page netlink receive buffer on the stack (mnl.c, NFT_NLMSG_MAXSIZE), so the
 * default is too tight. 8 MiB is a normal thread's stack; it is reserved per pool, and committed as it is used.
 */
const ASYNC_STACK_BYTES = 8 * 1024 * 1024;

/**
 * A transaction text up to this size is applied on the calling thread, anything larger on a koffi worker thread.
 * A delta (a one-endpoint change is two to five element operations) takes nft ≈ 0.1–1 ms, less than a sync's own
 * rendering; handing it to a worker thread and back costs two thread wake-ups, which on a loaded machine each wait
 * for a CPU (measured: see docs/nftables-layouts.md). 64 KiB is ≈ 700 element operations.
 */
const SYNC_MAX_BYTES = 64 * 1024;

/** The ctx pointer koffi hands back: opaque, passed back as it came. */
type CtxPointer = object;

interface Bindings {
  ctxNew: CFunction<[number], CtxPointer | null>;
  ctxFree: CFunction<[CtxPointer], void>;
  bufferOutput: CFunction<[CtxPointer], number>;
  bufferError: CFunction<[CtxPointer], number>;
  outputBuffer: CFunction<[CtxPointer], string | null>;
  errorBuffer: CFunction<[CtxPointer], string | null>;
  setDryRun: CFunction<[CtxPointer, boolean], void>;
  runFile: CFunction<[CtxPointer, string], number>;
  memfdCreate: CFunction<[string, number], number>;
}

/**
 * Every libnftables call of the process goes through this one queue. A context must not be used by two threads
 * at once (its output buffers and cache are plain memory), and nft 1.0.6 keeps some state of its own outside
 * contexts; the IPv4 and IPv6 backends' calls therefore take turns rather than run side by side.
 */
let queue: Promise<unknown> = Promise.resolve();
function serialized<T>(work: () => Promise<T>): Promise<T> {
  const next = queue.then(work, work);
  queue = next.catch(() => undefined);
  return next;
}

class Context implements LibnftablesContext {
  readonly #b: Bindings;
  #ctx: CtxPointer | null;

  constructor(b: Bindings) {
    this.#b = b;
    const ctx = b.ctxNew(NFT_CTX_DEFAULT);
    if (ctx === null) throw new Error('nft_ctx_new failed');
    // Without these, nft writes to this process's stdout and stderr; with them, to buffers read after each call.
    if (b.bufferOutput(ctx) !== 0 || b.bufferError(ctx) !== 0) {
      b.ctxFree(ctx);
      throw new Error('nft_ctx_buffer_output/error failed');
    }
    this.#ctx = ctx;
  }

  #live(): CtxPointer {
    if (this.#ctx === null) throw new Error('libnftables context already closed');
    return this.#ctx;
  }

  /** Runs `call` with dry-run set as asked, and reads both buffers after it. */
  async #call(call: (ctx: CtxPointer) => Promise<number>, dryRun: boolean): Promise<LibnftablesResult> {
    return serialized(async () => {
      const ctx = this.#live();
      const b = this.#b;
      b.setDryRun(ctx, dryRun);
      let rc: number;
      try {
        rc = await call(ctx);
      } finally {
        b.setDryRun(ctx, false);
      }
      // Each read returns what was written since the last one and empties the buffer.
      const stdout = b.outputBuffer(ctx) ?? '';
      const stderr = b.errorBuffer(ctx) ?? '';
      return { code: rc === 0 ? 0 : 1, stdout, stderr };
    });
  }

  runText(text: string, checkOnly: boolean): Promise<LibnftablesResult> {
    return this.#call(async (ctx) => {
      // nft reads a buffer fine, but reports an error in one without its line ("Error: …" and the buffer's
      // first line); a file's errors carry `FILE:LINE:COL` and the failing line itself, as `nft -f -` prints
      // them. So the text goes through an anonymous in-memory file (memfd), which nft opens by its /proc path.
      const fd = this.#b.memfdCreate('kube-proxy-ts-nft', MFD_CLOEXEC);
      if (fd < 0) throw new Error('memfd_create failed');
      try {
        const bytes = Buffer.from(text, 'utf8');
        for (let at = 0; at < bytes.length;) at += writeSync(fd, bytes, at, bytes.length - at);
        const path = `/proc/self/fd/${fd}`;
        return bytes.length <= SYNC_MAX_BYTES
          ? this.#b.runFile(ctx, path)
          : await callAsync(this.#b.runFile, ctx, path);
      } finally {
        closeSync(fd);
      }
    }, checkOnly);
  }

  close(): void {
    if (this.#ctx === null) return;
    const ctx = this.#ctx;
    this.#ctx = null;
    // After any call in flight: freeing the context under it would be a use after free.
    void serialized(async () => this.#b.ctxFree(ctx));
  }
}

/**
 * Loads libnftables, or says why it cannot be: koffi has no build for this platform, the library is not
 * installed, or a symbol is missing. Never throws.
 */
export function loadLibnftables(soname: string = LIBNFTABLES_SONAME): Libnftables | { error: string } {
  const koffi = loadKoffi();
  if ('error' in koffi) return koffi;
  try {
    // koffi takes settings only before its first library is loaded.
    if ((koffi.config().async_stack_size ?? 0) < ASYNC_STACK_BYTES)
      koffi.config({ async_stack_size: ASYNC_STACK_BYTES });
    const lib = koffi.load(soname);
    const libc = koffi.load('libc.so.6');
    const b: Bindings = {
      ctxNew: cFunction(lib, 'void *nft_ctx_new(uint32_t flags)'),
      ctxFree: cFunction(lib, 'void nft_ctx_free(void *ctx)'),
      bufferOutput: cFunction(lib, 'int nft_ctx_buffer_output(void *ctx)'),
      bufferError: cFunction(lib, 'int nft_ctx_buffer_error(void *ctx)'),
      outputBuffer: cFunction(lib, 'const char *nft_ctx_get_output_buffer(void *ctx)'),
      errorBuffer: cFunction(lib, 'const char *nft_ctx_get_error_buffer(void *ctx)'),
      setDryRun: cFunction(lib, 'void nft_ctx_set_dry_run(void *ctx, bool dry)'),
      runFile: cFunction(lib, 'int nft_run_cmd_from_filename(void *ctx, const char *filename)'),
      memfdCreate: cFunction(libc, 'int memfd_create(const char *name, unsigned int flags)'),
    };
    return { soname, newContext: () => new Context(b) };
  } catch (e) {
    return { error: `${soname} did not load: ${errorMessage(e)}` };
  }
}
