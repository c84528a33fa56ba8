// The lab kubelet's local-storage eviction, as upstream's eviction manager does it for ephemeral-storage limits:
// every few seconds it measures what each container of a Pod has written (its writable layer, the directory it
// runs in, and its logs, as upstream counts a container's rootfs and logs) and the Pod's emptyDir volumes; a Pod
// whose usage exceeds the sum of its containers' `resources.limits.ephemeral-storage`, or one of whose containers
// exceeds its own, is evicted: its containers are killed and it fails with reason Evicted. The lab has no image
// layers, so a container's writable layer is all it writes to outside its volumes and the host's files.
import { lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Clock, TimerHandle } from 'kube-proxy-ts/util/clock.js';
import { child, isObject, type JsonObject } from '../apiserver/json.js';
import { parseQuantity } from '../controllers/quantity.js';

/** How often usage is measured (upstream's eviction manager looks every 10 s; the lab a little sooner). */
export const STORAGE_CHECK_PERIOD_MS = 5_000;

/** A container's ephemeral-storage limit: as written in its spec, and in bytes. */
export interface StorageLimit {
  readonly text: string;
  readonly bytes: number;
}

/** `resources.limits.ephemeral-storage` of a container spec; undefined when it sets none (or none that parses). */
export function storageLimitOf(container: JsonObject): StorageLimit | undefined {
  const text = child(child(container, 'resources'), 'limits')['ephemeral-storage'];
  const value = typeof text === 'string' || typeof text === 'number' ? parseQuantity(text) : undefined;
  if (value === undefined || value < 0) return undefined;
  // Byte quantities round up, as resource.Quantity's Value() does ("0.5" is 1 byte).
  return { text: String(text), bytes: Math.ceil(value) };
}

const BINARY_SUFFIXES = ['Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei'];
const DECIMAL_SUFFIXES = ['k', 'M', 'G', 'T', 'P', 'E'];

/**
 * A byte count as resource.Quantity prints it: with the largest suffix of its format (binary, 1024s, or decimal,
 * 1000s) that divides it exactly, or as a plain number.
 */
export function formatBytes(bytes: number, binary: boolean): string {
  const [base, suffixes] = binary ? [1024, BINARY_SUFFIXES] : [1000, DECIMAL_SUFFIXES];
  let value = bytes;
  let suffix = '';
  for (const s of suffixes) {
    if (value === 0 || value % base !== 0) break;
    value /= base;
    suffix = s;
  }
  return `${value}${suffix}`;
}

/** Disk space taken under `path` (allocated blocks, as du counts them); 0 when it does not exist. */
export function diskUsage(path: string): number {
  let st;
  try {
    st = lstatSync(path);
  } catch {
    return 0;
  }
  const own = st.blocks * 512;
  if (!st.isDirectory()) return own;
  let entries: string[];
  try {
    entries = readdirSync(path);
  } catch {
    return own;
  }
  return entries.reduce((sum, name) => sum + diskUsage(join(path, name)), own);
}

/** One container as the eviction manager measures it. */
export interface MeasuredContainer {
  readonly name: string;
  readonly limit: StorageLimit | undefined;
  /** Bytes it uses now. */
  readonly usage: number;
}

/**
 * Why a Pod is to be evicted for its local storage (upstream's message, word for word), or undefined when it is
 * within its limits. The Pod's limit (the sum of its containers') is checked before each container's own.
 */
export function storageEvictionMessage(
  containers: readonly MeasuredContainer[],
  volumesUsage: number,
): string | undefined {
  const limited = containers.flatMap((c) => (c.limit ? [c.limit] : []));
  if (limited.length === 0) return undefined;
  const podLimit = limited.reduce((sum, l) => sum + l.bytes, 0);
  const podUsage = containers.reduce((sum, c) => sum + c.usage, volumesUsage);
  if (podUsage > podLimit) {
    // A sum takes the format of its first term, as resource.Quantity's Add keeps its receiver's.
    const total =
      limited.length === 1 ? limited[0]?.text : formatBytes(podLimit, /i$/.test(limited[0]?.text ?? ''));
    return `Pod ephemeral local storage usage exceeds the total limit of containers ${total ?? ''}. `;
  }
  const over = containers.find((c) => c.limit !== undefined && c.usage > c.limit.bytes);
  if (over?.limit)
    return `Container ${over.name} exceeded its local ephemeral storage limit "${over.limit.text}". `;
  return undefined;
}

/** What the monitor watches of one Pod. */
export interface StorageMonitorOptions {
  readonly clock: Clock;
  readonly periodMs?: number;
  /** The Pod's containers that run a command: each one's directory (writable layer and logs) and limit. */
  readonly containers: readonly {
    readonly name: string;
    readonly dir: string;
    readonly limit?: StorageLimit;
  }[];
  /** Its emptyDir volumes' directories. */
  readonly volumeDirs: readonly string[];
  /** Called once, with upstream's message, when the Pod is over a limit; the monitor has stopped by then. */
  readonly evict: (message: string) => void;
}

/** Measures a Pod's local storage every period until it is stopped or has evicted the Pod. */
export class StorageMonitor {
  private timer: TimerHandle | undefined;
  private stopped = false;

  constructor(private readonly o: StorageMonitorOptions) {}

  /** Whether any container of the Pod has a limit: without one there is nothing to watch. */
  get needed(): boolean {
    return this.o.containers.some((c) => c.limit !== undefined);
  }

  start(): void {
    if (this.stopped || !this.needed) return;
    this.timer = this.o.clock.setTimeout(() => {
      this.timer = undefined;
      if (!this.check()) this.start();
    }, this.o.periodMs ?? STORAGE_CHECK_PERIOD_MS);
  }

  /** Measures once; evicts (and stops) when the Pod is over a limit, which it returns. */
  check(): boolean {
    if (this.stopped) return false;
    const measured = this.o.containers.map((c) => ({
      name: c.name,
      limit: c.limit,
      usage: diskUsage(c.dir),
    }));
    const volumes = this.o.volumeDirs.reduce((sum, d) => sum + diskUsage(d), 0);
    const message = storageEvictionMessage(measured, volumes);
    if (message === undefined) return false;
    this.stop();
    this.o.evict(message);
    return true;
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) this.o.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }
}

/** The emptyDir volumes of a Pod on disk (not medium: Memory, which upstream counts as memory, not storage). */
export function emptyDirNames(pod: JsonObject): string[] {
  const volumes = child(pod, 'spec').volumes;
  if (!Array.isArray(volumes)) return [];
  return volumes.flatMap((v) => {
    if (!isObject(v) || !isObject(v.emptyDir) || typeof v.name !== 'string') return [];
    return (v.emptyDir as JsonObject).medium === 'Memory' ? [] : [v.name];
  });
}
