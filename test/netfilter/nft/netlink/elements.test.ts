// Which operations the netlink writer takes (canApply / unsupportedOperation): element add, create and delete,
// and flush of a set or map, on sets with a schema; everything else stays with nft, and the reason says why.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { NftOperation } from '../../../../packages/agent/src/netfilter/nft/objects.js';
import {
  canApply,
  unsupportedOperation,
} from '../../../../packages/agent/src/netfilter/nft/netlink/elements.js';
import { elementSchemas } from '../../../../packages/agent/src/netfilter/nft/netlink/schema.js';
import { vectorContainers, vectorOperations } from './vectors.js';

const schemas = elementSchemas([
  ...vectorContainers('ip'),
  { kind: 'set', name: 'firewall-allow', type: 'ipv4_addr . ipv4_addr', flags: ['interval'] },
]);
const el = (verb: NftOperation['verb'], set: string): NftOperation => ({
  verb,
  object: { kind: 'element', set, key: ['198.18.0.1'] },
});

describe('what goes through netlink', () => {
  test('every vector operation does', () => {
    assert.ok(canApply(vectorOperations('ip'), schemas));
    assert.ok(canApply([], schemas));
  });

  test('the first operation that does not, and why', () => {
    const cases: [NftOperation, RegExp][] = [
      [el('destroy', 'cluster-ips'), /verb destroy of an element/],
      [el('add', 'firewall-allow'), /no element schema for firewall-allow/],
      [el('add', 'no-such-set'), /no element schema for no-such-set/],
      [{ verb: 'flush', object: { kind: 'set', name: 'firewall-allow' } }, /no element schema/],
      [{ verb: 'delete', object: { kind: 'set', name: 'cluster-ips' } }, /delete of a set/],
      [{ verb: 'add', object: { kind: 'chain', name: 'c' } }, /a chain/],
      [{ verb: 'add', object: { kind: 'rule', chain: 'c', rule: 'drop' } }, /a rule/],
      [{ verb: 'delete', object: { kind: 'table' } }, /a table/],
    ];
    for (const [op, reason] of cases) {
      const ops = [el('add', 'cluster-ips'), op, el('add', 'cluster-ips')];
      assert.equal(canApply(ops, schemas), false);
      const r = unsupportedOperation(ops, schemas);
      assert.equal(r?.index, 1);
      assert.match(r?.reason ?? '', reason);
    }
  });
});
