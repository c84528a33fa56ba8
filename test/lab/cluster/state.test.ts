import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  acquireLabLock,
  readLabState,
  writeLabState,
  type LabState,
} from '../../../packages/lab/src/cluster/state.js';
import { labLayout, podNamespaceName, podVethName } from '../../../packages/lab/src/cluster/layout.js';
import { checkInterfaceName, checkNamespaceName } from '../../../packages/netns/src/index.js';
import { labState } from './fixtures.js';

const STATE: LabState = labState('kptslab');

describe('lab state', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kpts-state-'));

  test('round trip, and a missing file is "missing", not an error', () => {
    const path = join(dir, 'state.json');
    assert.deepEqual(readLabState(path), { ok: false, missing: true, reason: readLabStateReason(path) });
    writeLabState(path, STATE);
    assert.deepEqual(readLabState(path), { ok: true, state: STATE });
  });

  test('a record with wrong fields is refused naming them (a short prefix could sweep others’ namespaces)', () => {
    const path = join(dir, 'bad.json');
    writeFileSync(path, JSON.stringify({ ...STATE, prefix: 'k', mode: 'ipvsx', nodes: [1] }));
    const r = readLabState(path);
    assert.equal(r.ok, false);
    assert.match(r.ok ? '' : r.reason, /prefix, nodes, mode/);
    writeFileSync(path, '{not json');
    assert.match((readLabState(path) as { reason: string }).reason, /not JSON/);
  });

  test('one lab per state directory: a live holder refuses, a dead one is taken over', () => {
    const lockFile = join(dir, 'lock');
    const first = acquireLabLock(lockFile);
    assert.ok(first.ok);
    const second = acquireLabLock(lockFile);
    assert.deepEqual(second, { ok: false, holder: process.pid });
    if (first.ok) first.release();
    // A PID that cannot be alive (above the kernel's pid_max).
    writeFileSync(lockFile, '99999999');
    const third = acquireLabLock(lockFile);
    assert.ok(third.ok);
    assert.equal(readFileSync(lockFile, 'utf8'), String(process.pid));
    if (third.ok) third.release();
  });
});

function readLabStateReason(path: string): string {
  const r = readLabState(path);
  return r.ok ? '' : r.reason;
}

describe('lab layout', () => {
  test('nodes are named as kind names them, with the API server’s pod CIDRs and addresses', () => {
    const l = labLayout(3, 'kptstest');
    assert.deepEqual(
      l.nodes.map((n) => [n.name, n.namespace, n.ip, n.podCIDR, n.gatewayIP]),
      [
        ['control-plane', 'kptstest-control-plane', '198.18.0.10', '198.18.10.0/24', '198.18.10.1'],
        ['worker', 'kptstest-worker', '198.18.0.11', '198.18.11.0/24', '198.18.11.1'],
        ['worker2', 'kptstest-worker2', '198.18.0.12', '198.18.12.0/24', '198.18.12.1'],
      ],
    );
    assert.throws(() => labLayout(7), /outside 1…6/);
    assert.throws(() => labLayout(2, 'k'), /prefix/);
    assert.throws(() => labLayout(2, 'KPTS-LAB'), /prefix/);
  });

  test('pod namespaces and veths are valid names, unique, and long pod names are shortened with a hash', () => {
    assert.equal(podNamespaceName('kptslab', 'svc', 'web-abc'), 'kptslab-svc-web-abc');
    const long = 'x'.repeat(63);
    const a = podNamespaceName('kptslab', 'svc', `${long}a`);
    const b = podNamespaceName('kptslab', 'svc', `${long}b`);
    assert.notEqual(a, b);
    assert.equal(checkNamespaceName(a), a);
    assert.ok(a.length <= 64);
    const v = podVethName('0b6e3f3c-2d62-4d7b-9a55-4f0c3e1c6a11');
    assert.equal(checkInterfaceName(v), v);
    assert.notEqual(v, podVethName('another-uid'));
  });
});
