// How a kube-proxy-ts command line ends: every line written reaches the reader, a reader that leaves early ends us
// quietly, and nothing the process still holds (a pooled socket) keeps it alive. Shared by the agent's CLI and the
// lab's (packages/lab), so both behave alike in a pipe.

/** What a shell reports for a command killed by SIGPIPE (128 + 13), which is how a reader closing early ends us. */
const EXIT_READER_GONE = 141;

/** EPIPE: a pipe's reader closed; EIO: the terminal closed. Either way nobody reads what we write any more. */
function isReaderGone(error: unknown): boolean {
  const code = error instanceof Error ? (error as NodeJS.ErrnoException).code : undefined;
  return code === 'EPIPE' || code === 'EIO';
}

let whenReaderGone: (() => void) | undefined;
let readerGone = false;

/**
 * For a command that runs until it is stopped and must clean up first (`lab up`): when the reader of its stdout or
 * stderr goes away, `stop` runs instead of the immediate exit, and what is written afterwards is dropped, so the
 * clean-up runs to its end. (`lab up | tee lab.log` and Ctrl-C: the same SIGINT ends tee, and the lab's next
 * progress line has no reader.) The process then exits with 141, as one ended by SIGPIPE. Returns the undo.
 */
export function stopWhenReaderGone(stop: () => void): () => void {
  whenReaderGone = stop;
  return () => {
    if (whenReaderGone === stop) whenReaderGone = undefined;
  };
}

/** Whether stdout's or stderr's reader went away while a stopWhenReaderGone handler was in place. */
export function outputReaderGone(): boolean {
  return readerGone;
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
      // A reader that closed early is handled by runMain's 'error' listener (which exits unless a command asked
      // to stop instead); anything else cannot be reported.
      if (!isReaderGone(error) || whenReaderGone !== undefined) resolve();
    });
  });
}

async function exitWhenFlushed(exit: number): Promise<never> {
  const code = readerGone && exit === 0 ? EXIT_READER_GONE : exit;
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
      if (!isReaderGone(error)) throw error;
      if (whenReaderGone === undefined) process.exit(EXIT_READER_GONE);
      if (readerGone) return;
      readerGone = true;
      whenReaderGone();
    });
  }
  void main(process.argv.slice(2)).then(exitWhenFlushed, (error: unknown) => {
    process.stderr.write(
      `${name}: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    return exitWhenFlushed(1);
  });
}
