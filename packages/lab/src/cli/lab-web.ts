// `kube-proxy-ts lab web [--state-dir DIR]`: the running lab's web view URL (with its token), from the state file
// `lab up` wrote. Exit 1 when no lab is up, or the lab serves no web view.
import { labPaths } from '../cluster/layout.js';
import { processAlive, readLabState } from '../cluster/state.js';
import { stateDirArg } from './state-dir-arg.js';

export interface LabWebIO {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
}

const defaultIO: LabWebIO = {
  stdout: (t) => void process.stdout.write(t),
  stderr: (t) => void process.stderr.write(t),
};

export function labWebCommand(
  argv: readonly string[],
  defaultStateDir: string,
  io: LabWebIO = defaultIO,
): number {
  const parsed = stateDirArg(argv, defaultStateDir);
  if (typeof parsed === 'string' || parsed.rest.length > 0) {
    const what = typeof parsed === 'string' ? parsed : `unexpected ${JSON.stringify(parsed.rest[0])}`;
    io.stderr(`lab web: ${what}\nUsage: kube-proxy-ts lab web [--state-dir DIR]\n`);
    return 2;
  }
  const { stateDir } = parsed;
  const read = readLabState(labPaths(stateDir).stateFile);
  if (!read.ok) {
    io.stderr(
      read.missing
        ? `lab web: no lab is up (nothing in ${stateDir}); start one with \`lab up\`\n`
        : `lab web: ${read.reason}\n`,
    );
    return 1;
  }
  if (!processAlive(read.state.pid)) {
    io.stderr(
      `lab web: the lab (process ${read.state.pid}) is not running; \`lab down\` clears what it left\n`,
    );
    return 1;
  }
  if (read.state.webURL === undefined || read.state.webURL === '') {
    io.stderr('lab web: this lab serves no web view (it is still starting, or was started without one)\n');
    return 1;
  }
  io.stdout(`${read.state.webURL}\n`);
  return 0;
}
