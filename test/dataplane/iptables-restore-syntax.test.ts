// Hostile names and comments still give valid iptables-restore input: checked by the real `iptables-restore
// --test` (both back ends) inside a test namespace, then applied and read back with iptables-save, where every
// comment must come back as written (control characters as spaces, cut to the kernel's 255 bytes).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { renderIptablesRestore } from '../../packages/agent/src/backends/iptables/render-cache.js';
import type { Endpoint } from '../../packages/agent/src/model/endpoint.js';
import type { ServicePort } from '../../packages/agent/src/model/service-port.js';
import { IptablesClient, IptablesError } from '../../packages/agent/src/netfilter/iptables/client.js';
import { parseRestore } from '../../packages/agent/src/netfilter/iptables/parse.js';
import { iptablesBinaries } from '../../packages/agent/src/netfilter/iptables/variant.js';
import type { ProxySnapshot } from '../../packages/agent/src/sync/backend.js';
import { kernelOptions } from '../helpers/kernel.js';
import { servicePortOf } from '../helpers/model-values.js';
import { testNode } from '../backends/iptables/helpers.js';
import { systemClock } from '../../packages/agent/src/util/clock.js';
import { modeOptions, withSandbox } from '../backends/iptables/kernel-fixture.js';

const HOSTILE = [
  'ns"quote',
  'back\\slash\\',
  'new\nline\r\n*nat',
  'COMMIT',
  "it's -j ACCEPT",
  '# hash',
  'tab\there',
  'ünï ✓ ' + 'x'.repeat(300),
];

function hostilePort(i: number, text: string): ServicePort {
  const name = { namespace: `ns${i}`, name: text, port: `p "${i}"`, protocol: 'TCP' as const };
  return servicePortOf({
    key: `hostile-${i}`,
    name,
    nameString: `${name.namespace}/${name.name}:${name.port}`,
    serviceName: `${name.namespace}/${name.name}`,
    clusterIP: `198.18.100.${i + 1}`,
    nodePort: 30000 + i,
    sessionAffinityClientIP: i % 2 === 0,
    stickyMaxAgeSeconds: i % 2 === 0 ? 10800 : 0,
  });
}

function endpoint(ip: string): Endpoint {
  return {
    ip,
    port: 8080,
    endpoint: `${ip}:8080`,
    isLocal: false,
    ready: true,
    serving: true,
    terminating: false,
    zoneHints: new Set(),
    nodeHints: new Set(),
  };
}

function hostileSnapshot(): ProxySnapshot {
  const ports = HOSTILE.map((h, i) => hostilePort(i, h));
  return {
    serviceMap: new Map(ports.map((p) => [p.key, p])),
    endpointsMap: new Map(
      ports.map((p, i) => [p.key, [endpoint(`198.19.0.${i + 1}`), endpoint(`198.19.1.${i + 1}`)]]),
    ),
    topology: { nodeName: 'node-a' },
  };
}

function comments(text: string): string[] {
  const out: string[] = [];
  for (const t of parseRestore(text).tables) {
    for (const op of t.ops) {
      if (op.kind !== 'command') continue;
      const i = op.args.indexOf('--comment');
      if (i >= 0) out.push(op.args[i + 1] ?? '');
    }
  }
  return out.sort();
}

for (const variant of ['legacy', 'nft'] as const) {
  const bins = iptablesBinaries('IPv4', variant);
  describe(`hostile input through the real iptables-restore (${variant})`, () => {
    test(
      '--test accepts it; applied, every comment reads back as written',
      kernelOptions(['ip', bins.restore, bins.save]),
      async () => {
        await withSandbox(async ({ commands, lockFile }) => {
          const options = modeOptions(variant, lockFile);
          const text = renderIptablesRestore(hostileSnapshot(), testNode(), options);
          const client = new IptablesClient({
            family: 'IPv4',
            commands,
            clock: systemClock,
            variant,
            lockFile,
          });

          // --test really checks: a broken line is refused.
          await assert.rejects(
            client.restore('*nat\n:KUBE-X - [0:0]\n-A KUBE-X -m nosuchmatch -j RETURN\nCOMMIT\n', {
              test: true,
            }),
            (e: unknown) => e instanceof IptablesError && e.kind === 'restore',
          );
          await client.restore(text, { test: true });

          await client.restore(text);
          const saved = (await client.save('nat')) + (await client.save('filter'));
          const written = comments(text);
          assert.ok(written.length > HOSTILE.length * 4);
          assert.deepEqual(comments(saved), written);
          for (const c of written) assert.ok(Buffer.byteLength(c) <= 255);
        });
      },
    );
  });
}
