import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  createArgs,
  diffSets,
  operationLine,
  parseIPSetSave,
  restoreText,
  splitIPSetLine,
  syncOperations,
} from '../../../packages/agent/src/netfilter/ipset/restore.js';
import type { IPSetOperation } from '../../../packages/agent/src/netfilter/ipset/restore.js';
import { kubeIPSet } from '../../../packages/agent/src/netfilter/ipset/sets.js';

const sets = (o: Record<string, string[]>): Map<string, Set<string>> =>
  new Map(Object.entries(o).map(([k, v]) => [k, new Set(v)]));

describe('restore text', () => {
  test('create lines as upstream’s createSet builds them: no comment option, no family for bitmap:port', () => {
    assert.equal(
      operationLine({ verb: 'create', set: kubeIPSet('loopBack', 'IPv4') }),
      'create KUBE-LOOP-BACK hash:ip,port,ip family inet hashsize 1024 maxelem 65536',
    );
    assert.equal(
      operationLine({ verb: 'create', set: kubeIPSet('loadBalancerSourceCIDR', 'IPv6') }),
      'create KUBE-6-LOAD-BALANCER-SOURCE-CID hash:ip,port,net family inet6 hashsize 1024 maxelem 65536',
    );
    assert.equal(
      operationLine({ verb: 'create', set: kubeIPSet('healthCheckNodePort', 'IPv6') }),
      'create KUBE-6-HEALTH-CHECK-NODE-PORT bitmap:port range 0-65535',
    );
    assert.deepEqual(createArgs({ ...kubeIPSet('ipvsIPs', 'IPv4'), hashSize: 4096, maxElem: 1 }), [
      'create',
      'KUBE-IPVS-IPS',
      'hash:ip',
      'family',
      'inet',
      'hashsize',
      '4096',
      'maxelem',
      '1',
    ]);
  });

  test('add, del and flush lines, one per operation, in the order given', () => {
    const ops: IPSetOperation[] = [
      { verb: 'flush', name: 'KUBE-IPVS-IPS' },
      { verb: 'add', name: 'KUBE-CLUSTER-IP', entry: '10.0.0.1,tcp:80' },
      { verb: 'del', name: 'KUBE-NODE-PORT-TCP', entry: '30001' },
    ];
    assert.equal(
      restoreText(ops),
      'flush KUBE-IPVS-IPS\nadd KUBE-CLUSTER-IP 10.0.0.1,tcp:80\ndel KUBE-NODE-PORT-TCP 30001\n',
    );
    assert.equal(restoreText([]), '');
  });
});

describe('diffSets', () => {
  test('adds what is missing and deletes what is extra, adds first, each sorted', () => {
    const ops = diffSets(sets({ A: ['3', '1', '2'], B: ['x'] }), sets({ A: ['2', '9', '8'], B: ['y', 'x'] }));
    assert.deepEqual(ops.map(operationLine), ['add A 1', 'add A 3', 'del A 8', 'del A 9', 'del B y']);
  });

  test('equal states: nothing to do', () => {
    const state = sets({ A: ['10.0.0.1,tcp:80'], B: [] });
    assert.deepEqual(diffSets(state, sets({ A: ['10.0.0.1,tcp:80'], B: [] })), []);
  });

  test('a set missing from the current state is filled; an empty desired set is emptied', () => {
    assert.deepEqual(
      diffSets(sets({ NEW: ['1'], GONE: [] }), sets({ GONE: ['5', '4'] })).map(operationLine),
      ['add NEW 1', 'del GONE 4', 'del GONE 5'],
    );
  });

  test('sets the desired state does not name are left alone', () => {
    assert.deepEqual(diffSets(sets({ A: ['1'] }), sets({ A: ['1'], OTHER: ['2'] })), []);
  });

  test('deltas, never a rewrite: one changed entry is one add and one del, no flush', () => {
    const before = Array.from({ length: 100 }, (_, i) => `198.18.0.${i},tcp:80`);
    const after = [...before.slice(1), '198.18.1.1,tcp:80'];
    const ops = diffSets(sets({ S: after }), sets({ S: before }));
    assert.deepEqual(ops.map(operationLine), ['add S 198.18.1.1,tcp:80', 'del S 198.18.0.0,tcp:80']);
  });

  test('syncOperations: every create before any entry change', () => {
    const ops = syncOperations(
      [kubeIPSet('clusterIP', 'IPv4'), kubeIPSet('nodePortTCP', 'IPv4')],
      sets({ 'KUBE-CLUSTER-IP': ['10.0.0.1,tcp:80'], 'KUBE-NODE-PORT-TCP': [] }),
      sets({ 'KUBE-NODE-PORT-TCP': ['30001'] }),
    );
    assert.deepEqual(restoreText(ops).split('\n'), [
      'create KUBE-CLUSTER-IP hash:ip,port family inet hashsize 1024 maxelem 65536',
      'create KUBE-NODE-PORT-TCP bitmap:port range 0-65535',
      'add KUBE-CLUSTER-IP 10.0.0.1,tcp:80',
      'del KUBE-NODE-PORT-TCP 30001',
      '',
    ]);
  });
});

describe('parseIPSetSave', () => {
  // As ipset 7.17 printed it on this host (bucketsize and initval are the kernel's).
  const SAVED = [
    'create KUBE-6-CLUSTER-IP hash:ip,port family inet6 hashsize 1024 maxelem 65536 bucketsize 12 initval 0x6c728f93',
    'add KUBE-6-CLUSTER-IP 2001:db8::2,udp:53',
    'add KUBE-6-CLUSTER-IP 2001:db8::1,sctp:80',
    'create KUBE-NODE-PORT-TCP bitmap:port range 0-65535',
    'add KUBE-NODE-PORT-TCP 30001',
    'create cali40all-hosts-net hash:net family inet hashsize 1024 maxelem 1048576 bucketsize 12 initval 0x1',
    'add cali40all-hosts-net 192.168.0.0/16',
    '',
  ].join('\n');

  test('headers and entries of the kept sets; other sets unread', () => {
    const keep = new Set(['KUBE-6-CLUSTER-IP', 'KUBE-NODE-PORT-TCP']);
    const { sets: got, problems } = parseIPSetSave(SAVED, (n) => keep.has(n));
    assert.deepEqual(problems, []);
    assert.deepEqual([...got.keys()], ['KUBE-6-CLUSTER-IP', 'KUBE-NODE-PORT-TCP']);
    assert.deepEqual(got.get('KUBE-6-CLUSTER-IP'), {
      name: 'KUBE-6-CLUSTER-IP',
      type: 'hash:ip,port',
      family: 'IPv6',
      hashSize: 1024,
      maxElem: 65536,
      otherOptions: ['bucketsize', '12', 'initval', '0x6c728f93'],
      entries: new Set(['2001:db8::2,udp:53', '2001:db8::1,sctp:80']),
    });
    assert.deepEqual(got.get('KUBE-NODE-PORT-TCP'), {
      name: 'KUBE-NODE-PORT-TCP',
      type: 'bitmap:port',
      portRange: { first: 0, last: 65535 },
      otherOptions: [],
      entries: new Set(['30001']),
    });
  });

  test('a kept set of a type we do not use, or an entry before its create, is a problem with its line', () => {
    const { problems } = parseIPSetSave(SAVED + 'add LATE 1\n');
    assert.deepEqual(
      problems.map((p) => [p.line, p.reason]),
      [
        [6, 'set type hash:net is not one the agent uses'],
        [7, 'entry of set cali40all-hosts-net before its create line'],
        [8, 'entry of set LATE before its create line'],
      ],
    );
  });

  test('splitIPSetLine keeps a quoted comment whole', () => {
    assert.deepEqual(splitIPSetLine('add S 10.0.0.1 comment "a b \\"c\\""'), [
      'add',
      'S',
      '10.0.0.1',
      'comment',
      'a b \\"c\\"',
    ]);
    assert.deepEqual(splitIPSetLine('   '), []);
  });
});
