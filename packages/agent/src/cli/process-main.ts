// How a kube-proxy-ts command line ends: every line written reaches the reader, a reader that leaves early ends us
// quietly, and nothing the process still holds (a pooled socket) keeps it alive. Shared by the agent's CLI and the
// lab's (packages/lab), so both behave alike in a pipe.

/** What a shell reports for a command killed by SIGPIPE (128 + 13), which is how a reader closing early ends us. */
const EXIT_READER_GONE = 141;

function isBrokenPipe(error: unknown): boolean {
  return error instanceof Error && (error as NodeJS.ErrnoException).code === 'EPIPE';
}

/**
 * Resolves once everything written to `stream` so far has reached the OS. A pipe's writes are asynchronous in
 * Node.js, so process.exit() right after a large write drops whatever the reader has not taken yet (`render | wc`
 * saw 436 of 114,078 lines). The empty write's callback runs after every earlier write has completed.
 */
function flushed(stream: NodeJS.WriteStream): Promise<void> {
  return new Promise((resolve) => {
    if (stream.destroyed || !stream.writable) {
      resolve();
      return;
    }
    stream.write('', (error) => {
      // A reader that closed early is handled by runMain's 'error' listener; anything else cannot be reported.
      if (!isBrokenPipe(error)) resolve();
    });
  });
}

async function exitWhenFlushed(code: number): Promise<never> {
  process.exitCode = code;
  await Promise.all([flushed(process.stdout), flushed(process.stderr)]);
  // Exit explicitly even so: the agent has closed what it owns, and a pooled keep-alive socket to the API server
  // must not hold a stopping proxy for seconds (a DaemonSet rollout, or the lab's config change, waits on this).
  process.exit(code);
}

/**
 * Runs `main` with the command line's arguments and exits with what it returns once stdout and stderr have drained;
 * an error it throws is printed under `name` and ends the process with 1.
 */
export function runMain(name: string, main: (argv: readonly string[]) => Promise<number>): void {
  // A reader that stops early (`render | head -1`) makes the next write fail with EPIPE. That is not an error of
  // ours: stop at once and quietly, as a Unix tool killed by SIGPIPE would (Node.js ignores the signal itself).
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (error: unknown) => {
      if (isBrokenPipe(error)) process.exit(EXIT_READER_GONE);
      throw error;
    });
  }
  void main(process.argv.slice(2)).then(exitWhenFlushed, (error: unknown) => {
    process.stderr.write(
      `${name}: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    return exitWhenFlushed(1);
  });
}
