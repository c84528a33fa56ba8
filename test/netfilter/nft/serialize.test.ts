import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { NftObject, NftObjectKind, NftVerb } from '../../../packages/agent/src/netfilter/nft/objects.js';
import {
  NFT_OBJECT_KINDS,
  NFT_VERBS,
  VERBS_BY_KIND,
} from '../../../packages/agent/src/netfilter/nft/objects.js';
import { parseOperationLine, parseOperations } from '../../../packages/agent/src/netfilter/nft/parse.js';
import { goQuote, quoteComment } from '../../../packages/agent/src/netfilter/nft/quote.js';
import { parseNftError } from '../../../packages/agent/src/netfilter/nft/executor.js';
import {
  ELEMENTS_PER_LINE,
  serializeOperations,
  serializeTransaction,
  writeOperation,
} from '../../../packages/agent/src/netfilter/nft/serialize.js';
import type { NftOperation } from '../../../packages/agent/src/netfilter/nft/objects.js';
import { NftTransaction } from '../../../packages/agent/src/netfilter/nft/transaction.js';

const ref = { family: 'ip', table: 'kube-proxy' } as const;

const samples: { readonly [K in NftObjectKind]: NftObject } = {
  table: { kind: 'table', comment: 'rules for kube-proxy' },
  chain: { kind: 'chain', name: 'nat-prerouting', base: { type: 'nat', hook: 'prerouting', priority: -100 } },
  rule: { kind: 'rule', chain: 'services', rule: 'ip daddr @cluster-ips reject', comment: 'c', handle: 7 },
  set: { kind: 'set', name: 'affinity-X', type: 'ipv4_addr', flags: ['dynamic', 'timeout'], timeout: 10800 },
  map: {
    kind: 'map',
    name: 'service-nodeports',
    type: 'inet_proto . inet_service : verdict',
    comment: 'NodePort traffic',
  },
  element: {
    kind: 'element',
    set: 'service-ips',
    key: ['172.30.0.41', 'tcp', '80'],
    value: ['goto x'],
    comment: 'ns/s:p',
  },
};

// Expected lines written from knftables' format (upstream-backends.md §1.9), one per kind × verb.
const expected: { readonly [K in NftObjectKind]: Partial<Record<NftVerb, string>> } = {
  table: {
    add: 'add table ip kube-proxy { comment "rules for kube-proxy" ; }',
    create: 'create table ip kube-proxy { comment "rules for kube-proxy" ; }',
    delete: 'delete table ip kube-proxy',
    destroy: 'destroy table ip kube-proxy',
    flush: 'flush table ip kube-proxy',
  },
  chain: {
    add: 'add chain ip kube-proxy nat-prerouting { type nat hook prerouting priority -100 ; }',
    create: 'create chain ip kube-proxy nat-prerouting { type nat hook prerouting priority -100 ; }',
    delete: 'delete chain ip kube-proxy nat-prerouting',
    destroy: 'destroy chain ip kube-proxy nat-prerouting',
    flush: 'flush chain ip kube-proxy nat-prerouting',
  },
  rule: {
    add: 'add rule ip kube-proxy services handle 7 ip daddr @cluster-ips reject comment "c"',
    insert: 'insert rule ip kube-proxy services handle 7 ip daddr @cluster-ips reject comment "c"',
    replace: 'replace rule ip kube-proxy services handle 7 ip daddr @cluster-ips reject comment "c"',
    delete: 'delete rule ip kube-proxy services handle 7',
    destroy: 'destroy rule ip kube-proxy services handle 7',
  },
  set: {
    add: 'add set ip kube-proxy affinity-X { type ipv4_addr ; flags dynamic,timeout ; timeout 10800s ; }',
    create:
      'create set ip kube-proxy affinity-X { type ipv4_addr ; flags dynamic,timeout ; timeout 10800s ; }',
    delete: 'delete set ip kube-proxy affinity-X',
    destroy: 'destroy set ip kube-proxy affinity-X',
    flush: 'flush set ip kube-proxy affinity-X',
  },
  map: {
    add: 'add map ip kube-proxy service-nodeports { type inet_proto . inet_service : verdict ; comment "NodePort traffic" ; }',
    create:
      'create map ip kube-proxy service-nodeports { type inet_proto . inet_service : verdict ; comment "NodePort traffic" ; }',
    delete: 'delete map ip kube-proxy service-nodeports',
    destroy: 'destroy map ip kube-proxy service-nodeports',
    flush: 'flush map ip kube-proxy service-nodeports',
  },
  element: {
    add: 'add element ip kube-proxy service-ips { 172.30.0.41 . tcp . 80 comment "ns/s:p" : goto x }',
    create: 'create element ip kube-proxy service-ips { 172.30.0.41 . tcp . 80 comment "ns/s:p" : goto x }',
    delete: 'delete element ip kube-proxy service-ips { 172.30.0.41 . tcp . 80 }',
    destroy: 'destroy element ip kube-proxy service-ips { 172.30.0.41 . tcp . 80 }',
  },
};

describe('writeOperation', () => {
  for (const kind of NFT_OBJECT_KINDS) {
    for (const verb of NFT_VERBS) {
      const line = expected[kind][verb];
      if (!VERBS_BY_KIND[kind].has(verb)) {
        test(`${kind} × ${verb} is rejected`, () => {
          assert.equal(line, undefined, 'a golden line for a verb nft does not accept');
          const tx = new NftTransaction().add(verb, samples[kind]);
          assert.equal(tx.size, 0);
          assert.equal(tx.error?.code, 'Invalid');
        });
        continue;
      }
      test(`${kind} × ${verb}`, () => {
        assert.ok(line, `no golden line for ${kind} × ${verb}`);
        assert.equal(writeOperation(ref, { verb, object: samples[kind] }), line);
      });
    }
  }

  test('plain chains and sets without comment', () => {
    assert.equal(
      writeOperation(ref, { verb: 'add', object: { kind: 'chain', name: 'services' } }),
      'add chain ip kube-proxy services',
    );
    assert.equal(
      writeOperation(
        { family: 'ip6', table: 'kube-proxy' },
        { verb: 'add', object: { kind: 'element', set: 'cluster-ips', key: ['fd00::1'] } },
      ),
      'add element ip6 kube-proxy cluster-ips { fd00::1 }',
    );
  });

  test('every golden add line parses back to the same object', () => {
    for (const kind of NFT_OBJECT_KINDS) {
      const line = writeOperation(ref, { verb: 'add', object: samples[kind] });
      const parsed = parseOperationLine(line);
      assert.notEqual(typeof parsed, 'string', String(parsed));
      if (typeof parsed === 'string') return;
      assert.equal(writeOperation(ref, parsed.op), line);
    }
  });
});

describe('comments', () => {
  test('Go quoting of ordinary and special text', () => {
    assert.equal(goQuote('ns1/svc1:p80'), '"ns1/svc1:p80"');
    assert.equal(goQuote('a"b\\c\n\t\u0001é\u200b😀'), '"a\\"b\\\\c\\n\\t\\x01é\\u200b😀"');
  });

  test('a quote or a line break can never end the string or the line', () => {
    const q = quoteComment('x" ; add table ip evil\n}{#');
    assert.equal(q, `"x' ; add table ip evil }{#"`);
    assert.equal(q.indexOf('"', 1), q.length - 1, 'only the closing quote');
    assert.ok(!q.includes('\n'));
  });

  test('truncated to 128 bytes between the quotes, never inside an escape or a character', () => {
    assert.equal(quoteComment('a'.repeat(300)), `"${'a'.repeat(128)}"`);
    const multi = quoteComment('é'.repeat(100)); // 2 bytes each → 64 fit
    assert.equal(multi, `"${'é'.repeat(64)}"`);
    const escapes = quoteComment('\\'.repeat(100)); // each becomes two bytes "\\"
    assert.equal(escapes, `"${'\\\\'.repeat(64)}"`);
  });
});

describe('NftTransaction', () => {
  test('keeps the first validation error and the operations before it', () => {
    const tx = new NftTransaction()
      .add('add', { kind: 'chain', name: 'ok' })
      .add('add', { kind: 'chain', name: 'bad name;' })
      .add('add', { kind: 'rule', chain: 'ok', rule: 'drop\nadd table ip x' })
      .add('add', { kind: 'chain', name: 'ok2' });
    assert.equal(tx.size, 2);
    assert.equal(tx.error?.code, 'Invalid');
    assert.match(tx.error?.message ?? '', /chain name "bad name;"/);
    assert.equal(tx.error?.line, 2);
  });

  test('rejects hostile element fields and rule text', () => {
    const bad: NftObject[] = [
      { kind: 'element', set: 'cluster-ips', key: ['1.2.3.4 }'] },
      { kind: 'element', set: 'cluster-ips', key: [''] },
      { kind: 'rule', chain: 'c', rule: 'drop # x' },
      { kind: 'rule', chain: 'c', rule: 'ip daddr "x" drop' },
      { kind: 'map', name: 'm', type: 'ipv4_addr' },
      { kind: 'set', name: 's', type: 'ipv4_addr ; flags x' },
    ];
    for (const object of bad) {
      const tx = new NftTransaction().add('add', object);
      assert.equal(tx.error?.code, 'Invalid', JSON.stringify(object));
    }
  });
});

describe("serializeTransaction (the executor's text)", () => {
  const el = (verb: NftVerb, set: string, key: string, value?: string, comment?: string): NftOperation => ({
    verb,
    object: {
      kind: 'element',
      set,
      key: key.split(' . '),
      ...(value !== undefined ? { value: [value] } : {}),
      ...(comment !== undefined ? { comment } : {}),
    },
  });
  const ops: NftOperation[] = [
    { verb: 'add', object: { kind: 'chain', name: 'c' } },
    el('add', 'service-ips', '198.18.0.1 . tcp . 80', 'goto c'),
    el('add', 'service-ips', '198.18.0.2 . tcp . 80', 'goto c', 'ns/s:p'),
    el('add', 'cluster-ips', '198.18.0.1'),
    el('delete', 'cluster-ips', '198.18.0.3'),
    el('delete', 'cluster-ips', '198.18.0.4'),
    el('add', 'service-ips', '198.18.0.5 . tcp . 80', 'drop'),
  ];

  test("a set's element operations between two other operations share one statement, removals first", () => {
    const t = serializeTransaction(ref, ops);
    assert.deepEqual(t.text.split('\n'), [
      'add chain ip kube-proxy c',
      'add element ip kube-proxy service-ips { 198.18.0.1 . tcp . 80 : goto c, 198.18.0.2 . tcp . 80 comment "ns/s:p" : goto c, 198.18.0.5 . tcp . 80 : drop }',
      'delete element ip kube-proxy cluster-ips { 198.18.0.3, 198.18.0.4 }',
      'add element ip kube-proxy cluster-ips { 198.18.0.1 }',
      '',
    ]);
    // Each element is exactly what its own line would hold.
    const own = serializeOperations(ref, ops).split('\n');
    assert.equal(
      own[2],
      'add element ip kube-proxy service-ips { 198.18.0.2 . tcp . 80 comment "ns/s:p" : goto c }',
    );
  });

  test('elements never move across another operation: a set exists before them, a chain before its verdicts', () => {
    const t = serializeTransaction(ref, [
      el('add', 'cluster-ips', '198.18.0.1'),
      { verb: 'add', object: { kind: 'chain', name: 'later' } },
      el('add', 'service-ips', '198.18.0.1 . tcp . 80', 'goto later'),
      { verb: 'flush', object: { kind: 'set', name: 'cluster-ips' } },
      el('add', 'cluster-ips', '198.18.0.2'),
    ]);
    assert.deepEqual(t.text.split('\n'), [
      'add element ip kube-proxy cluster-ips { 198.18.0.1 }',
      'add chain ip kube-proxy later',
      'add element ip kube-proxy service-ips { 198.18.0.1 . tcp . 80 : goto later }',
      'flush set ip kube-proxy cluster-ips',
      'add element ip kube-proxy cluster-ips { 198.18.0.2 }',
      '',
    ]);
  });

  test('a key deleted and added back keeps that order; one added and then deleted is written in its order', () => {
    // A changed value (delete + add of one key) and a removal of another key, interleaved as the planner writes.
    const changed = serializeTransaction(ref, [
      el('delete', 'service-ips', '198.18.0.1 . tcp . 80'),
      el('add', 'service-ips', '198.18.0.1 . tcp . 80', 'goto b'),
      el('delete', 'service-ips', '198.18.0.2 . tcp . 80'),
      el('add', 'service-ips', '198.18.0.2 . tcp . 80', 'goto b'),
      el('delete', 'service-ips', '198.18.0.3 . tcp . 80'),
    ]);
    assert.deepEqual(changed.text.split('\n'), [
      'delete element ip kube-proxy service-ips { 198.18.0.1 . tcp . 80, 198.18.0.2 . tcp . 80, 198.18.0.3 . tcp . 80 }',
      'add element ip kube-proxy service-ips { 198.18.0.1 . tcp . 80 : goto b, 198.18.0.2 . tcp . 80 : goto b }',
      '',
    ]);
    // Deleting a key added earlier in the run must stay after that add: the group is written there.
    const readded = serializeTransaction(ref, [
      el('add', 'cluster-ips', '198.18.0.1'),
      el('add', 'cluster-ips', '198.18.0.2'),
      el('delete', 'cluster-ips', '198.18.0.9'),
      el('delete', 'cluster-ips', '198.18.0.1'),
      el('add', 'cluster-ips', '198.18.0.3'),
    ]);
    assert.deepEqual(readded.text.split('\n'), [
      'delete element ip kube-proxy cluster-ips { 198.18.0.9 }',
      'add element ip kube-proxy cluster-ips { 198.18.0.1, 198.18.0.2 }',
      'delete element ip kube-proxy cluster-ips { 198.18.0.1 }',
      'add element ip kube-proxy cluster-ips { 198.18.0.3 }',
      '',
    ]);
  });

  test('parsed back, the text is the same operations on the same sets, each key in its order', () => {
    const mixed: NftOperation[] = [
      { verb: 'add', object: { kind: 'chain', name: 'c' } },
      ...ops.slice(1),
      el('delete', 'service-ips', '198.18.0.1 . tcp . 80'),
      el('add', 'service-ips', '198.18.0.1 . tcp . 80', 'goto c', 'a, b'),
    ];
    const parsed = parseOperations(serializeTransaction(ref, mixed).text);
    assert.deepEqual(parsed.errors, []);
    const bySet = (list: readonly NftOperation[]): Map<string, string[]> => {
      const out = new Map<string, string[]>();
      for (const op of list) {
        const set = op.object.kind === 'element' ? op.object.set : '';
        out.set(set, [...(out.get(set) ?? []), writeOperation(ref, op)]);
      }
      return out;
    };
    // Same operations; per set, every key's operations in their order (removals of other keys may come first).
    assert.deepEqual(
      [...parsed.ops.map((o) => writeOperation(ref, o))].sort(),
      mixed.map((o) => writeOperation(ref, o)).sort(),
    );
    for (const [set, written] of bySet(parsed.ops)) {
      const wanted = bySet(mixed).get(set) ?? [];
      for (const key of new Set(written.map((l) => /\{ (\S+)/.exec(l)?.[1]))) {
        const of = (l: string[]): string[] => l.filter((x) => /\{ (\S+)/.exec(x)?.[1] === key);
        assert.deepEqual(of(written), of(wanted), `${set} ${key ?? ''}`);
      }
    }
  });

  test('a line holds at most ELEMENTS_PER_LINE elements', () => {
    const many = Array.from({ length: ELEMENTS_PER_LINE + 1 }, (_, i) =>
      el('add', 'cluster-ips', `198.18.${i >> 8}.${i & 255}`),
    );
    const lines = serializeTransaction(ref, many).text.split('\n');
    assert.equal(lines.length, 3);
    assert.equal(lines[1], 'add element ip kube-proxy cluster-ips { 198.18.3.232 }');
  });

  test("nft's line and column of an error name the element's operation", () => {
    const t = serializeTransaction(ref, ops);
    const written = t.text.split('\n');
    // nft marks the element's key: 1-based column of its first character.
    const col = (line: number, needle: string): number => (written[line - 1] ?? '').indexOf(needle) + 1;
    assert.equal(t.operationAt(1, 1), 0);
    assert.equal(t.operationAt(2, col(2, '198.18.0.1')), 1);
    assert.equal(t.operationAt(2, col(2, '198.18.0.2')), 2);
    // The third element of that statement is the last operation, moved up to its set's statement.
    assert.equal(t.operationAt(2, col(2, '198.18.0.5')), 6);
    assert.equal(t.operationAt(3, col(3, '198.18.0.4')), 5);
    assert.equal(t.operationAt(4, 30), 3);
    assert.equal(t.operationAt(9, 1), undefined);
    const e = parseNftError(
      `/dev/stdin:2:${col(2, '198.18.0.2')}-${col(2, '198.18.0.2') + 20}: Error: Could not process rule: File exists\n`,
      ops,
      1,
      (l, c) => t.operationAt(l, c),
    );
    assert.equal(e.code, 'Exists');
    assert.equal(e.line, 3);
    assert.deepEqual(e.operation, ops[2]);
  });
});
