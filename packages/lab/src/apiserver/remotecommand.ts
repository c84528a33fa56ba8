// pods/exec and pods/attach: kubectl's streaming protocol over WebSocket, the one current kubectl speaks
// (k8s.io/apimachinery/pkg/util/remotecommand; client-go's websocket executor, default since kubectl 1.30).
// Every binary message starts with a channel byte: 0 stdin, 1 stdout, 2 stderr, 3 error (a Status ending the
// stream, carrying a non-zero exit code as cause ExitCode), 4 resize (JSON {Width, Height}); v5 adds 255, "close
// channel N" (kubectl closes its stdin so). SPDY, what kubectl before 1.29 needs, is refused with a Status that
// says which kubectl works.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { StreamSession, StreamingKubelet } from '../controllers/pod-lifecycle.js';
import { child, str } from './json.js';
import { pickContainer } from './pod-log.js';
import type { Registry } from './registry.js';
import { resourceByKind } from './resources.js';
import { errors, statusObject, type ApiError } from './status.js';
import { acceptWebSocket, isWebSocketUpgrade, offeredProtocols } from './websocket.js';
import type { Kubelet } from '../controllers/pod-lifecycle.js';

export const STREAM_PROTOCOLS = ['v5.channel.k8s.io', 'v4.channel.k8s.io'] as const;
const STDIN = 0;
const STDOUT = 1;
const STDERR = 2;
const ERROR = 3;
const RESIZE = 4;
const CLOSE = 255;

/** A plain HTTP answer on a raw socket (an upgrade that is refused never becomes an HTTP response object). */
export function rejectUpgrade(socket: Duplex, err: ApiError): void {
  const body = JSON.stringify(statusObject(err));
  const text =
    { 400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found' }[err.code] ?? 'Error';
  socket.end(
    `HTTP/1.1 ${err.code} ${text}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
      `Connection: close\r\n\r\n${body}`,
  );
}

export const UNSUPPORTED_STREAMING =
  'the lab API server streams exec, attach and run -i over WebSocket only (v5.channel.k8s.io or v4.channel.k8s.io); ' +
  'this client asked for SPDY: use kubectl v1.30 or newer (v1.29 with KUBECTL_REMOTE_COMMAND_WEBSOCKETS=true)';

/** The Status that ends a stream: success, or the exit code as upstream's NonZeroExitCode. */
export function exitStatus(result: { readonly exitCode: number } | { readonly error: string }): object {
  if ('error' in result)
    return { metadata: {}, status: 'Failure', message: result.error, reason: 'InternalError', code: 500 };
  if (result.exitCode === 0) return { metadata: {}, status: 'Success' };
  return {
    metadata: {},
    status: 'Failure',
    message: `command terminated with non-zero exit code: exit status ${result.exitCode}`,
    reason: 'NonZeroExitCode',
    details: { causes: [{ reason: 'ExitCode', message: String(result.exitCode) }] },
  };
}

/**
 * Serves an upgrade request if it is pods/exec or pods/attach; false for any other path (the caller refuses it).
 * `parts` are the decoded path segments; the caller has checked the bearer token.
 */
export function serveRemoteCommand(
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  parts: readonly string[],
  query: URLSearchParams,
  registry: Registry,
  kubelet: (Kubelet & Partial<StreamingKubelet>) | undefined,
): boolean {
  const [api, v1, nsWord, namespace = '', podsWord, name = '', verb] = parts;
  if (
    parts.length !== 7 ||
    api !== 'api' ||
    v1 !== 'v1' ||
    nsWord !== 'namespaces' ||
    podsWord !== 'pods' ||
    (verb !== 'exec' && verb !== 'attach')
  )
    return false;
  if (!isWebSocketUpgrade(req)) {
    rejectUpgrade(socket, errors.badRequest(UNSUPPORTED_STREAMING));
    return true;
  }
  const offered = offeredProtocols(req);
  const protocol = STREAM_PROTOCOLS.find((p) => offered.includes(p));
  if (!protocol) {
    rejectUpgrade(
      socket,
      errors.badRequest(
        `no streaming protocol in common: the client offered [${offered.join(', ')}], the lab speaks ` +
          `[${STREAM_PROTOCOLS.join(', ')}] (kubectl v1.30 or newer)`,
      ),
    );
    return true;
  }
  const pod = registry.get(resourceByKind('Pod'), namespace, name);
  if (!pod.ok) {
    rejectUpgrade(socket, pod.error);
    return true;
  }
  const phase = str(child(pod.value, 'status'), 'phase');
  if (phase === 'Succeeded' || phase === 'Failed') {
    rejectUpgrade(
      socket,
      errors.badRequest(`cannot ${verb} a container in a completed pod; current phase is ${phase}`),
    );
    return true;
  }
  const picked = pickContainer(
    pod.value,
    kubelet?.containers(namespace, name),
    query.get('container') ?? undefined,
  );
  if (!picked.ok) {
    rejectUpgrade(socket, picked.error);
    return true;
  }
  const command = query.getAll('command');
  if (verb === 'exec' && command.length === 0) {
    rejectUpgrade(socket, errors.badRequest('you must specify at least 1 command'));
    return true;
  }
  if (!kubelet?.exec || !kubelet.attach) {
    rejectUpgrade(socket, errors.badRequest(`no kubelet runs pod ${name}: ${verb} is not available`));
    return true;
  }

  const ws = acceptWebSocket(req, socket, head, protocol);
  const flag = (k: string): boolean => query.get(k) === 'true' || query.get(k) === '1';
  const stdinListeners: ((d: Buffer | null) => void)[] = [];
  const resizeListeners: ((s: { width: number; height: number }) => void)[] = [];
  const closeListeners: (() => void)[] = [];
  let finished = false;
  ws.onMessage((m) => {
    const channel = m[0];
    const data = m.subarray(1);
    if (channel === STDIN) for (const l of stdinListeners) l(data);
    else if (channel === RESIZE) {
      try {
        const size = JSON.parse(data.toString('utf8')) as { Width?: number; Height?: number };
        if (typeof size.Width === 'number' && typeof size.Height === 'number')
          for (const l of resizeListeners) l({ width: size.Width, height: size.Height });
      } catch {
        // A malformed resize is ignored, as upstream does.
      }
    } else if (channel === CLOSE && data[0] === STDIN) for (const l of stdinListeners) l(null);
  });
  ws.onClose(() => {
    for (const l of closeListeners) l();
  });
  const send = (channel: number, data: Buffer): void => {
    if (finished || data.length === 0) return;
    ws.send(Buffer.concat([Buffer.from([channel]), data]));
  };
  const session: StreamSession = {
    stdin: flag('stdin'),
    stdout: flag('stdout'),
    stderr: flag('stderr'),
    tty: flag('tty'),
    onStdin: (fn) => void stdinListeners.push(fn),
    onResize: (fn) => void resizeListeners.push(fn),
    onClose: (fn) => void closeListeners.push(fn),
    writeStdout: (d) => send(STDOUT, d),
    writeStderr: (d) => send(STDERR, d),
    finish(result) {
      if (finished) return;
      send(ERROR, Buffer.from(JSON.stringify(exitStatus(result))));
      finished = true;
      ws.close(1000);
    },
  };
  if (verb === 'exec') kubelet.exec(namespace, name, picked.value.name, command, session);
  else kubelet.attach(namespace, name, picked.value.name, session);
  return true;
}
