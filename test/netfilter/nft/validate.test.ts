import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { runValuesProblem, validateOperation } from '../../../packages/agent/src/netfilter/nft/validate.js';

describe('runValuesProblem', () => {
  const set = 'endpoints-cluster-tcp';

  test('accepts one value per line, fields joined by " . "', () => {
    assert.equal(runValuesProblem(set, '198.18.0.1 . 80'), undefined);
    assert.equal(runValuesProblem(set, '198.18.0.1 . 80\n198.18.0.2 . 8080\n198.18.0.3 . 80'), undefined);
    assert.equal(runValuesProblem(set, '2001:db8::1 . 443\n2001:db8::a:2 . 443'), undefined);
    assert.equal(runValuesProblem(set, 'goto-nothing'), undefined);
  });

  test('refuses text that would change the meaning of the nft input', () => {
    for (const values of [
      '',
      '198.18.0.1 . 80\n',
      '\n198.18.0.1 . 80',
      '198.18.0.1 . 80\n\n198.18.0.2 . 80',
      '198.18.0.1 . 80; flush ruleset',
      '198.18.0.1 . 80 # comment',
      '198.18.0.1 .  80',
      '198.18.0.1 80',
      '198.18.0.1 . "80"',
      '198.18.0.1 . 80\r',
      '198.18.0.1 . 80 }',
    ]) {
      const problem = runValuesProblem(set, values);
      assert.ok(problem !== undefined, JSON.stringify(values));
      assert.match(problem, new RegExp(`^element in ${set}: invalid values `));
    }
  });

  test('refuses a set name nft cannot hold', () => {
    assert.match(runValuesProblem('bad set', '198.18.0.1 . 80') ?? '', /is not a valid nft identifier/);
    assert.match(runValuesProblem('', '198.18.0.1 . 80') ?? '', /empty name/);
  });
});

describe('validateOperation: names found valid are remembered, never a bad one', () => {
  test('a bad name is refused after many good ones, past the memo bound', () => {
    for (let i = 0; i < 5000; i++) {
      const ok = validateOperation({ verb: 'add', object: { kind: 'chain', name: `chain-${i}` } });
      assert.equal(ok, undefined);
    }
    assert.match(
      validateOperation({ verb: 'add', object: { kind: 'chain', name: 'chain 1' } }) ?? '',
      /chain name "chain 1" is not a valid nft identifier/,
    );
    // A name seen valid stays valid on its next check, and its elements' fields are still checked.
    const element = (key: string) =>
      validateOperation({ verb: 'add', object: { kind: 'element', set: 'chain-4999', key: [key] } });
    assert.equal(element('198.18.0.1'), undefined);
    assert.match(element('198.18.0.1;') ?? '', /invalid key field/);
  });
});
