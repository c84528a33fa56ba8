// The Events kube-proxy writes, as upstream's does (cmd/kube-proxy/app/server.go): an events.k8s.io/v1 recorder
// with reportingController "kube-proxy" and client-go's reportingInstance "kube-proxy-<hostname>", each event about
// this node's Node. Today that is one event, "Starting" (action StartKubeProxy) once the informers run; upstream's
// other one, the IPVS deprecation warning, has no counterpart here (ipvs mode is refused, not deprecated).
// An event is a courtesy to whoever runs `kubectl describe node`: it is sent in the background, and a failure is
// logged once and changes nothing else.
import type { Clock } from '../util/clock.js';
import type { Logger } from '../util/logger.js';
import { errorMessage } from '../util/error-message.js';
import type { ApiClient } from './api-client.js';
import { statusError } from './api-client.js';

export const REPORTING_CONTROLLER = 'kube-proxy';

export interface NodeEvent {
  readonly type: 'Normal' | 'Warning';
  readonly reason: string;
  readonly action: string;
  readonly note: string;
}

export interface NodeEventWriterOptions {
  readonly client: ApiClient;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly nodeName: string;
  /** The host's name, for reportingInstance (client-go's NewRecorder uses os.Hostname(), not the node's name). */
  readonly hostname: string;
  /** How long one POST may take (default 10 s). */
  readonly timeoutMs?: number;
}

/** metav1.MicroTime: RFC 3339 with microseconds. */
const microTime = (ms: number): string => new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');

/** The events.k8s.io/v1 Event for `e` about node `nodeName`, at `ms`. */
export function nodeEventObject(
  e: NodeEvent,
  nodeName: string,
  hostname: string,
  ms: number,
): Record<string, unknown> {
  return {
    apiVersion: 'events.k8s.io/v1',
    kind: 'Event',
    // client-go's name: the object's name and the time in hex nanoseconds; a cluster-scoped object's events live in
    // "default".
    metadata: { name: `${nodeName}.${(BigInt(ms) * 1_000_000n).toString(16)}`, namespace: 'default' },
    eventTime: microTime(ms),
    reportingController: REPORTING_CONTROLLER,
    reportingInstance: `${REPORTING_CONTROLLER}-${hostname}`,
    action: e.action,
    reason: e.reason,
    // Upstream refers to the Node by name, with the name as its uid too (server.go's NodeRef).
    regarding: { kind: 'Node', name: nodeName, uid: nodeName },
    note: e.note,
    type: e.type,
  };
}

export class NodeEventWriter {
  private failureLogged = false;

  constructor(private readonly o: NodeEventWriterOptions) {}

  /** Posts the event; resolves whether or not it was written (false: it was not, and that was logged once). */
  async write(e: NodeEvent): Promise<boolean> {
    const { client, clock, nodeName, hostname } = this.o;
    const path = '/apis/events.k8s.io/v1/namespaces/default/events';
    try {
      const body = nodeEventObject(e, nodeName, hostname, clock.now());
      const res = await client.post(path, body, AbortSignal.timeout(this.o.timeoutMs ?? 10_000));
      if (res.status >= 200 && res.status < 300) {
        res.body.resume();
        return true;
      }
      throw await statusError(res, `POST ${path}`);
    } catch (error) {
      if (!this.failureLogged) {
        this.failureLogged = true;
        this.o.logger.warn('cannot write event; continuing without events', {
          reason: e.reason,
          error: errorMessage(error),
        });
      }
      return false;
    }
  }

  /** Upstream's birth cry: "Starting", action StartKubeProxy, no note. */
  starting(): Promise<boolean> {
    return this.write({ type: 'Normal', reason: 'Starting', action: 'StartKubeProxy', note: '' });
  }
}
