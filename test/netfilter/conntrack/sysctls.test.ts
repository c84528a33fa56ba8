import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import {
  CONNTRACK_SYSCTL_PATHS as P,
  DEFAULT_CONNTRACK_SYSCTLS,
  applyConntrackSysctls,
  desiredConntrackMax,
} from '../../../packages/agent/src/netfilter/conntrack/sysctls.js';
import { SILENT_LOGGER } from '../../../packages/agent/src/util/logger.js';

async function fakeRoot(values: Partial<Record<keyof typeof P, number>>): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'kpts-sysctl-'));
  for (const [k, v] of Object.entries(values)) {
    const path = join(root, P[k as keyof typeof P]);
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, `${v}\n`);
  }
  return root;
}

async function value(root: string, key: keyof typeof P): Promise<number> {
  return Number((await readFile(join(root, P[key]), 'utf8')).trim());
}

describe('conntrack sysctls', () => {
  test('nf_conntrack_max = max(maxPerCore × cpus, min)', () => {
    assert.equal(desiredConntrackMax(DEFAULT_CONNTRACK_SYSCTLS, 2), 131072); // 65536 < min
    assert.equal(desiredConntrackMax(DEFAULT_CONNTRACK_SYSCTLS, 8), 262144); // 32768 × 8
    assert.equal(desiredConntrackMax({ ...DEFAULT_CONNTRACK_SYSCTLS, maxPerCore: 0 }, 8), 0);
  });

  test('raises max and hashsize, writes differing timeouts, leaves equal ones alone', async () => {
    const root = await fakeRoot({
      max: 65536,
      hashsize: 16384,
      tcpEstablished: 432000,
      tcpCloseWait: 3600, // already right
      tcpBeLiberal: 0,
      udp: 30,
      udpStream: 120,
    });
    try {
      const r = await applyConntrackSysctls(
        {
          ...DEFAULT_CONNTRACK_SYSCTLS,
          tcpBeLiberal: true,
          udpTimeoutSeconds: 60,
          udpStreamTimeoutSeconds: 120,
        },
        { root, cpus: 8, logger: SILENT_LOGGER },
      );
      assert.deepEqual(r.problems, []);
      assert.equal(await value(root, 'max'), 262144);
      assert.equal(await value(root, 'hashsize'), 65536);
      assert.equal(await value(root, 'tcpEstablished'), 86400);
      assert.equal(await value(root, 'tcpBeLiberal'), 1);
      assert.equal(await value(root, 'udp'), 60);
      assert.deepEqual(
        r.writes.map((w) => [w.path, w.from, w.to]),
        [
          [P.max, 65536, 262144],
          [P.hashsize, 16384, 65536],
          [P.tcpEstablished, 432000, 86400],
          [P.tcpBeLiberal, 0, 1],
          [P.udp, 30, 60],
        ],
        'close_wait and udp_stream already had the value: not written',
      );
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  test('never lowers nf_conntrack_max or hashsize; zero settings are left alone', async () => {
    const root = await fakeRoot({ max: 1_000_000, hashsize: 500_000, tcpBeLiberal: 0, udp: 30 });
    try {
      const r = await applyConntrackSysctls(
        { ...DEFAULT_CONNTRACK_SYSCTLS, tcpEstablishedTimeoutSeconds: 0, tcpCloseWaitTimeoutSeconds: 0 },
        { root, cpus: 2, logger: SILENT_LOGGER },
      );
      assert.deepEqual(r.writes, []);
      assert.deepEqual(r.problems, []);
      assert.equal(await value(root, 'max'), 1_000_000);
      assert.equal(await value(root, 'udp'), 30);
      assert.equal(await value(root, 'tcpBeLiberal'), 0);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  test('a missing or unwritable file is a problem naming it; the rest is still applied', async () => {
    const root = await fakeRoot({ max: 100, tcpEstablished: 1, tcpCloseWait: 1 });
    try {
      const r = await applyConntrackSysctls(DEFAULT_CONNTRACK_SYSCTLS, {
        root,
        cpus: 1,
        logger: SILENT_LOGGER,
      });
      // hashsize's directory does not exist: reading and writing it fail.
      assert.ok(r.problems.some((p) => p.startsWith(P.hashsize)));
      assert.equal(await value(root, 'max'), 131072);
      assert.equal(await value(root, 'tcpEstablished'), 86400);
      assert.equal(await value(root, 'tcpCloseWait'), 3600);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});
