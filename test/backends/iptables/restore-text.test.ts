// The cached-text path must write exactly what the structured serializer writes for the same rules: the test
// builds the reference as a RestoreInput (filter then nat; top-level chains whole; the written ports' chains; stale
// chains declared, then deleted) and serializes it with serializeRestore; the cache goes through servicePortText +
// assembleRestoreText. Counts are checked against the text itself.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type {
  ServicePortRules,
  TopLevelRules,
} from '../../../packages/agent/src/backends/iptables/render.js';
import {
  assembleRestoreText,
  joinTopRules,
  servicePortText,
  topLevelText,
} from '../../../packages/agent/src/backends/iptables/restore-text.js';
import { serializeRestore } from '../../../packages/agent/src/netfilter/iptables/serialize.js';
import type { IptablesRule, RestoreInput } from '../../../packages/agent/src/netfilter/iptables/types.js';

/** The reference: the restore input as structured data, in the order iptables-restore must read it. */
function referenceRestore(
  top: TopLevelRules,
  all: readonly ServicePortRules[],
  written: readonly ServicePortRules[],
  staleChains: readonly string[],
): RestoreInput {
  const filterRules: IptablesRule[] = [...all.flatMap((p) => p.filterRules), ...top.filterRules];
  const natRules: IptablesRule[] = [
    ...all.flatMap((p) => p.natTopRules),
    ...top.natRules,
    ...written.flatMap((p) => p.chainRules),
  ];
  return {
    tables: [
      { table: 'filter', chains: top.filterChains, rules: filterRules, deleteChains: [] },
      {
        table: 'nat',
        chains: [...top.natChains, ...written.flatMap((p) => p.chains), ...staleChains],
        rules: natRules,
        deleteChains: staleChains,
      },
    ],
  };
}

function port(n: number, withFilter: boolean): ServicePortRules {
  const svc = `KUBE-SVC-PORT${n}`;
  const sep = `KUBE-SEP-PORT${n}`;
  return {
    filterRules: withFilter
      ? [
          {
            chain: 'KUBE-SERVICES',
            args: ['-m', 'comment', '--comment', `ns/s${n}:p has no endpoints`, '-j', 'REJECT'],
          },
        ]
      : [],
    natTopRules: [{ chain: 'KUBE-SERVICES', args: ['-d', `198.18.0.${n}`, '-j', svc] }],
    chains: [svc, sep],
    chainRules: [
      { chain: svc, args: ['-j', sep] },
      { chain: sep, args: ['-p', 'tcp', '-j', 'DNAT', '--to-destination', `198.19.0.${n}:80`] },
    ],
    noLocalEndpointsInternal: false,
    noLocalEndpointsExternal: n === 2,
  };
}

const TOP: TopLevelRules = {
  filterChains: ['KUBE-SERVICES', 'KUBE-FORWARD'],
  filterRules: [{ chain: 'KUBE-FORWARD', args: ['-j', 'ACCEPT'] }],
  natChains: ['KUBE-SERVICES', 'KUBE-NODEPORTS'],
  natRules: [
    { chain: 'KUBE-SERVICES', args: ['-m', 'addrtype', '--dst-type', 'LOCAL', '-j', 'KUBE-NODEPORTS'] },
  ],
};

/** `-A` lines per table, counted from the text. */
function countRules(text: string): Record<string, number> {
  const out: Record<string, number> = {};
  let table = '';
  for (const line of text.split('\n')) {
    if (line.startsWith('*')) table = line.slice(1);
    else if (line.startsWith('-A ')) out[table] = (out[table] ?? 0) + 1;
  }
  return out;
}

describe('assembleRestoreText', () => {
  const ports = [port(1, false), port(2, true), port(3, false)];
  const texts = ports.map(servicePortText);

  for (const [label, writtenIdx, stale] of [
    ['full sync', [0, 1, 2], []],
    ['partial sync, one port written, two stale chains', [1], ['KUBE-SEP-GONE1', 'KUBE-SVC-GONE2']],
    ['partial sync, nothing written', [], []],
  ] as const) {
    test(`${label}: the same text as the structured path, and counts that match it`, () => {
      const expected = serializeRestore(
        referenceRestore(
          TOP,
          ports,
          writtenIdx.map((i) => ports[i] as ServicePortRules),
          stale,
        ),
      );
      const got = assembleRestoreText({
        top: topLevelText(TOP),
        joined: joinTopRules(texts),
        written: writtenIdx.map((i) => texts[i] as ReturnType<typeof servicePortText>),
        staleChains: stale,
      });
      assert.equal(got.text, expected);
      assert.equal(got.lines, expected.split('\n').length - 1);
      const counts = countRules(expected);
      assert.equal(got.filterRules, counts.filter ?? 0);
      assert.equal(got.natRules, counts.nat ?? 0);
    });
  }

  test('a port with a quoted comment keeps its quoting in the cached text', () => {
    const t = servicePortText(port(2, true));
    assert.equal(
      t.filterRules,
      '-A KUBE-SERVICES -m comment --comment "ns/s2:p has no endpoints" -j REJECT\n',
    );
    assert.equal(t.chainLines, ':KUBE-SVC-PORT2 - [0:0]\n:KUBE-SEP-PORT2 - [0:0]\n');
    assert.equal(t.noLocalEndpointsExternal, true);
  });
});
