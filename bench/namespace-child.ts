// A bench step run as a Node.js process of its own inside the bench's network namespace (`ip netns exec`), so its
// peak RSS is its own and its kernel work lands in that namespace. The child reports one JSON value on stdout, on
// a line that starts with a mark; everything else it prints is passed over, and its stderr goes to the bench's.
import { spawn } from 'node:child_process';

export interface NamespaceChild {
  /** The network namespace to run in. */
  readonly ns: string;
  /** The node command line: the Node.js binary, its flags, the script. */
  readonly argv: readonly string[];
  /** Extra environment (the child's spec). */
  readonly env: Readonly<Record<string, string>>;
  /** What starts the reporting line. */
  readonly mark: string;
  /** Names the run in an error. */
  readonly what: string;
}

/** Runs the child to its end; resolves with the value on its marked line, rejects if it failed or gave none. */
export function runNamespaceChild<T>(c: NamespaceChild): Promise<T> {
  return new Promise((resolve, reject) => {
    const child = spawn('ip', ['netns', 'exec', c.ns, ...c.argv], {
      env: { ...process.env, ...c.env },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (s: string) => (out += s));
    child.on('error', reject);
    child.on('close', (code) => {
      const line = out.split('\n').find((l) => l.startsWith(c.mark));
      if (code !== 0 || line === undefined) reject(new Error(`${c.what}: child exited with ${code}\n${out}`));
      else resolve(JSON.parse(line.slice(c.mark.length)) as T);
    });
  });
}
