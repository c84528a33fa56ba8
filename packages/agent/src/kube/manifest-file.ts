// The one loader for commands that take -f FILE (render; explain and diff when they come): reads the file ("-" is
// stdin), parses it with readManifests, and, when that takes more than a second (a dump of a large cluster), says
// on stderr how far it has got, in a few lines at most. Fast inputs print nothing.
import type { ManifestObjects, ManifestProgress } from './manifests.js';
import { readManifests } from './manifests.js';
import { errorMessage } from '../util/error-message.js';

export interface ManifestFileIO {
  /** The file's text; "-" is stdin. Throws when it cannot be read. */
  readonly readFile: (path: string) => string;
  readonly stderr: (text: string) => void;
  /** Monotonic milliseconds (performance.now). */
  readonly now: () => number;
}

/** Reading that takes longer than this gets progress lines. */
export const PROGRESS_AFTER_MS = 1000;
/** Progress lines at most this often. */
const PROGRESS_EVERY_MS = 2000;

export type LoadedManifests =
  | { readonly ok: true; readonly source: string; readonly objects: ManifestObjects }
  | { readonly ok: false; readonly source: string; readonly error: string };

function count(n: number): string {
  return n.toLocaleString('en-US');
}

/**
 * Reads and parses `path`. `command` prefixes every line it prints ("render"). A file that cannot be read is an
 * error value naming the file; problems inside it are in objects.problems, for the command to report.
 */
export function loadManifestFile(path: string, command: string, io: ManifestFileIO): LoadedManifests {
  const source = path === '-' ? 'stdin' : path;
  const started = io.now();
  let text: string;
  try {
    text = io.readFile(path);
  } catch (e) {
    return { ok: false, source, error: `cannot read ${source}: ${errorMessage(e)}` };
  }
  let lastLine: number | undefined;
  const onProgress = (p: ManifestProgress): void => {
    const t = io.now();
    if (t - started < PROGRESS_AFTER_MS) return;
    if (lastLine !== undefined && t - lastLine < PROGRESS_EVERY_MS) return;
    lastLine = t;
    io.stderr(`${command}: reading ${source}: ${count(p.objects)} objects…\n`);
  };
  const objects = readManifests(text, source, { onProgress });
  const elapsed = io.now() - started;
  if (lastLine !== undefined || elapsed >= PROGRESS_AFTER_MS) {
    const n =
      objects.services.length + objects.endpointSlices.length + objects.nodes.length + objects.ignored.length;
    io.stderr(`${command}: read ${source}: ${count(n)} objects in ${(elapsed / 1000).toFixed(1)} s\n`);
  }
  return { ok: true, source, objects };
}
