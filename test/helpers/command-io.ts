// In-process runs of the commands that read objects from -f FILE (render, diff, explain): an io that keeps what
// they print and serves their files from memory, as test/cli and test/inspect call them.
import type { FileCommandIO } from '../../packages/agent/src/cli/cluster-objects.js';

/** What a command printed; read it once the command has returned (or its promise has settled). */
export interface Printed {
  stdout: string;
  stderr: string;
}

/**
 * A FileCommandIO whose stdout and stderr are kept in `printed`, whose readFile serves `files` (any other path
 * throws ENOENT, as a missing file does) and whose host is `hostname`.
 */
export function recordingFileIO(
  files: Readonly<Record<string, string>>,
  hostname: string,
): { io: FileCommandIO; printed: Printed } {
  const printed: Printed = { stdout: '', stderr: '' };
  const io: FileCommandIO = {
    stdout: (t) => void (printed.stdout += t),
    stderr: (t) => void (printed.stderr += t),
    readFile: (p) => {
      const text = files[p];
      if (text === undefined) throw new Error(`ENOENT: no such file ${p}`);
      return text;
    },
    hostname: () => hostname,
  };
  return { io, printed };
}
