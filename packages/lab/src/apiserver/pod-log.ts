// pods/log: what `kubectl logs` reads, from the log file of each container run the kubelet keeps. Query
// parameters as upstream's PodLogOptions: container, previous, tailLines, limitBytes, follow. A follow stream
// ends when the container's run ends (a restart starts a new file: kubectl's -f then ends, as with a real
// kubelet), when the Pod goes, or when the client disconnects.
import { closeSync, openSync, readSync, statSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Kubelet, KubeletContainer } from '../controllers/pod-lifecycle.js';
import { arr, child, str, type JsonObject } from './json.js';
import { errors, type ApiError, type Result } from './status.js';

const FOLLOW_POLL_MS = 200;

/** Picks the container a logs (or exec) request means, with upstream's messages when it cannot. */
export function pickContainer(
  pod: JsonObject,
  running: readonly KubeletContainer[] | undefined,
  wanted: string | undefined,
): Result<KubeletContainer> {
  const name = str(child(pod, 'metadata'), 'name') ?? '';
  const declared = arr(child(pod, 'spec'), 'containers').map((c) => str(c, 'name') ?? '');
  if (wanted === undefined || wanted === '') {
    if (declared.length !== 1)
      return {
        ok: false,
        error: errors.badRequest(
          `a container name must be specified for pod ${name}, choose one of: [${declared.join(' ')}]`,
        ),
      };
    wanted = declared[0] ?? '';
  }
  // Init containers (sidecars too) have logs of their own, named with -c as upstream allows.
  const inits = arr(child(pod, 'spec'), 'initContainers').map((c) => str(c, 'name') ?? '');
  if (!declared.includes(wanted) && !inits.includes(wanted))
    return { ok: false, error: errors.badRequest(`container ${wanted} is not valid for pod ${name}`) };
  const c = running?.find((x) => x.name === wanted);
  if (!c) {
    const phase = str(child(pod, 'status'), 'phase') ?? 'Pending';
    const why =
      phase === 'Pending' ? 'is waiting to start: ContainerCreating' : `is not running (pod phase ${phase})`;
    return { ok: false, error: errors.badRequest(`container "${wanted}" in pod "${name}" ${why}`) };
  }
  return { ok: true, value: c };
}

function readFrom(path: string, start: number): Buffer {
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r');
    const size = statSync(path).size;
    if (size <= start) return Buffer.alloc(0);
    const buf = Buffer.alloc(size - start);
    const n = readSync(fd, buf, 0, buf.length, start);
    return buf.subarray(0, n);
  } catch {
    return Buffer.alloc(0);
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** The last `lines` lines of `text` (a trailing newline does not count as a line). */
export function tailLines(text: Buffer, lines: number): Buffer {
  if (lines <= 0) return Buffer.alloc(0);
  let end = text.length;
  if (end > 0 && text[end - 1] === 0x0a) end--;
  let i = end;
  let seen = 0;
  while (i > 0) {
    if (text[i - 1] === 0x0a) {
      seen++;
      if (seen === lines) break;
    }
    i--;
  }
  return text.subarray(i);
}

export function servePodLog(
  req: IncomingMessage,
  res: ServerResponse,
  pod: JsonObject,
  kubelet: Kubelet | undefined,
  q: URLSearchParams,
  sendError: (err: ApiError) => void,
): void {
  const meta = child(pod, 'metadata');
  const [namespace, name] = [str(meta, 'namespace') ?? '', str(meta, 'name') ?? ''];
  const picked = pickContainer(pod, kubelet?.containers(namespace, name), q.get('container') ?? undefined);
  if (!picked.ok) return sendError(picked.error);
  const container = picked.value;
  const previous = q.get('previous') === 'true';
  const path = container.logFile(previous);
  if (path === undefined)
    return sendError(
      errors.badRequest(`previous terminated container "${container.name}" in pod "${name}" not found`),
    );
  let body = readFrom(path, 0);
  let offset = body.length;
  const tail = q.get('tailLines');
  if (tail !== null && /^\d+$/.test(tail)) body = tailLines(body, Number(tail));
  const limit = Number(q.get('limitBytes') ?? '');
  if (limit > 0 && body.length > limit) body = body.subarray(0, limit);
  res.writeHead(200, { 'Content-Type': 'text/plain', 'Transfer-Encoding': 'chunked' });
  res.write(body);
  if (q.get('follow') !== 'true' || previous) {
    res.end();
    return;
  }
  // Follow the file while it is still the container's current run.
  const timer = setInterval(() => {
    const now = kubelet?.containers(namespace, name)?.find((c) => c.name === container.name);
    const more = readFrom(path, offset);
    if (more.length > 0) {
      offset += more.length;
      res.write(more);
    }
    if (!now || now.logFile(false) !== path) {
      clearInterval(timer);
      res.end();
    }
  }, FOLLOW_POLL_MS);
  const stop = (): void => clearInterval(timer);
  req.on('close', stop);
  res.on('close', stop);
}
