// Upstream kube-proxy exits when its --config file is written or renamed (an fsnotify watch), leaving the restart
// to its supervisor. We watch the file and its directory: a ConfigMap volume updates by swapping the `..data`
// symlink in the directory (atomic rename), which a watch on the file alone may never see. The callback may fire
// several times for one edit; the caller is expected to exit on the first.
import { watch } from 'node:fs';
import type { FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';
import { errorMessage } from '../util/error-message.js';

export type ConfigFileEvent =
  | { readonly kind: 'write' | 'rename'; readonly path: string; readonly name: string }
  | { readonly kind: 'error'; readonly path: string; readonly error: string };

export interface ConfigFileWatcher {
  close(): void;
}

export type WatchResult =
  { readonly ok: true; readonly watcher: ConfigFileWatcher } | { readonly ok: false; readonly error: string };

/** Kubelet's atomic writer names its swapped entries "..data" and "..<timestamp>". */
function concernsFile(entry: string | null, file: string): boolean {
  return entry === null || entry === file || entry.startsWith('..');
}

export function watchConfigFile(path: string, onChange: (event: ConfigFileEvent) => void): WatchResult {
  const file = basename(path);
  const watchers: FSWatcher[] = [];
  let closed = false;
  const emit = (event: ConfigFileEvent): void => {
    if (!closed) onChange(event);
  };
  const close = (): void => {
    closed = true;
    for (const w of watchers) w.close();
  };
  const onError = (error: Error): void => emit({ kind: 'error', path, error: error.message });
  try {
    const onFile = watch(path, { persistent: false }, (eventType) =>
      emit({ kind: eventType === 'change' ? 'write' : 'rename', path, name: file }),
    );
    onFile.on('error', onError);
    watchers.push(onFile);
    const onDir = watch(dirname(path), { persistent: false }, (eventType, entry) => {
      const name = entry === null ? null : entry.toString();
      if (!concernsFile(name, file)) return;
      emit({ kind: eventType === 'change' ? 'write' : 'rename', path, name: name ?? file });
    });
    onDir.on('error', onError);
    watchers.push(onDir);
  } catch (error: unknown) {
    close();
    return {
      ok: false,
      error: `cannot watch ${path}: ${errorMessage(error)}`,
    };
  }
  return { ok: true, watcher: { close } };
}
