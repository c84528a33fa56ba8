// The config watcher against a real temporary directory: a write to the file, a rename over it, and a
// ConfigMap-style "..data" symlink swap each fire the callback. Waits are bounded.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  mkdtempSync,
  mkdirSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
  appendFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { watchConfigFile } from '../../packages/agent/src/config/watch.js';
import type { ConfigFileEvent } from '../../packages/agent/src/config/watch.js';

const WAIT_MS = 5_000;

/** Starts a watch, runs `change`, and resolves with the first event (rejects after WAIT_MS). */
async function firstEvent(path: string, change: () => void): Promise<ConfigFileEvent> {
  let close = (): void => {};
  try {
    return await new Promise<ConfigFileEvent>((resolve, reject) => {
      // A deadline for a clear failure, not a wait.
      const timer = setTimeout(() => reject(new Error(`no event within ${WAIT_MS} ms`)), WAIT_MS);
      const started = watchConfigFile(path, (event) => {
        clearTimeout(timer);
        resolve(event);
      });
      if (!started.ok) {
        clearTimeout(timer);
        reject(new Error(started.error));
        return;
      }
      close = () => started.watcher.close();
      change();
    });
  } finally {
    close();
  }
}

describe('watchConfigFile', () => {
  const dirs: string[] = [];
  const tempDir = (): string => {
    const dir = mkdtempSync(join(tmpdir(), 'kpts-config-watch-'));
    dirs.push(dir);
    return dir;
  };
  /** A temporary directory holding config.conf (`mode: iptables`). */
  const configFile = (): { dir: string; path: string } => {
    const dir = tempDir();
    const path = join(dir, 'config.conf');
    writeFileSync(path, 'mode: iptables\n');
    return { dir, path };
  };
  test.after(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  test('fires on a write to the file', async () => {
    const { path } = configFile();
    const event = await firstEvent(path, () => appendFileSync(path, 'mode: nftables\n'));
    assert.notEqual(event.kind, 'error');
  });

  test('fires when another file is renamed over it', async () => {
    const { dir, path } = configFile();
    const event = await firstEvent(path, () => {
      writeFileSync(join(dir, 'config.conf.new'), 'mode: nftables\n');
      renameSync(join(dir, 'config.conf.new'), path);
    });
    assert.equal(event.kind, 'rename');
  });

  test('fires on a ConfigMap-style ..data symlink swap', async () => {
    const dir = tempDir();
    mkdirSync(join(dir, '..v1'));
    mkdirSync(join(dir, '..v2'));
    writeFileSync(join(dir, '..v1', 'config.conf'), 'mode: iptables\n');
    writeFileSync(join(dir, '..v2', 'config.conf'), 'mode: nftables\n');
    symlinkSync('..v1', join(dir, '..data'));
    symlinkSync(join('..data', 'config.conf'), join(dir, 'config.conf'));
    const event = await firstEvent(join(dir, 'config.conf'), () => {
      symlinkSync('..v2', join(dir, '..data_tmp'));
      renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
    });
    assert.equal(event.kind, 'rename');
  });

  test('an event for an unrelated file in the directory does not fire', async () => {
    const { dir, path } = configFile();
    // After the unrelated write, a real write proves the watcher is alive; the first event must be ours.
    const event = await firstEvent(path, () => {
      writeFileSync(join(dir, 'other.txt'), 'x');
      appendFileSync(path, '# touched\n');
    });
    assert.ok(event.kind !== 'error' && event.name === 'config.conf', JSON.stringify(event));
  });

  test('a missing file is an error value, not a throw', () => {
    const r = watchConfigFile(join(tempDir(), 'missing.conf'), () => {});
    assert.equal(r.ok, false);
    if (!r.ok) assert.match(r.error, /missing\.conf/);
  });
});
