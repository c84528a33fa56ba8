import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  parseConntrackLine,
  parseConntrackListing,
} from '../../../packages/agent/src/netfilter/conntrack/flow.js';

describe('parseConntrackListing', () => {
  test('reads -o extended UDP, TCP and IPv6 lines, skips summaries and garbage with reasons', () => {
    const text = [
      'ipv4     2 udp      17 29 src=198.18.0.1 dst=198.18.100.1 sport=40000 dport=53 [UNREPLIED] src=198.18.0.2 dst=198.18.0.1 sport=5353 dport=40000 mark=0 use=1',
      'ipv4     2 tcp      6 431999 ESTABLISHED src=10.0.0.1 dst=10.96.0.1 sport=5000 dport=443 src=10.0.0.9 dst=10.0.0.1 sport=6443 dport=5000 [ASSURED] mark=0 zone=3 use=1',
      'ipv6     10 udp      17 115 src=2001:db8::1 dst=2001:DB8:1::53 sport=1000 dport=53 src=2001:db8::9 dst=2001:db8::1 sport=53 dport=1000 [ASSURED] mark=0 use=1',
      'ipv4     2 icmp     1 29 src=198.18.0.1 dst=198.18.0.2 type=8 code=0 id=7 src=198.18.0.2 dst=198.18.0.1 type=0 code=0 id=7 mark=0 use=1',
      'ipv4     2 udp      17 29 src=198.18.0.1 sport=1 dport=2 mark=0',
      'conntrack v1.4.7 (conntrack-tools): 3 flow entries have been shown.',
      '',
    ].join('\n');
    const { flows, skipped } = parseConntrackListing(text);
    assert.equal(flows.length, 4);
    assert.deepEqual(flows[0], {
      family: 'IPv4',
      protocol: 'udp',
      original: { src: '198.18.0.1', dst: '198.18.100.1', sport: 40000, dport: 53 },
      reply: { src: '198.18.0.2', dst: '198.18.0.1', sport: 5353, dport: 40000 },
    });
    assert.equal(flows[1]!.protocol, 'tcp');
    assert.deepEqual(flows[1]!.reply, { src: '10.0.0.9', dst: '10.0.0.1', sport: 6443, dport: 5000 });
    assert.equal(flows[2]!.family, 'IPv6');
    assert.equal(flows[2]!.original.dst, '2001:db8:1::53', 'lower-cased');
    assert.deepEqual(flows[3]!.original, { src: '198.18.0.1', dst: '198.18.0.2' }, 'ICMP has no ports');
    assert.equal(skipped.length, 1);
    assert.match(skipped[0]!, /missing original or reply/);
  });

  test('reads the plain format (no layer-3 prefix) that -D and -R echo', () => {
    const f = parseConntrackLine(
      'udp      17 28 src=198.18.0.1 dst=198.18.100.1 sport=40000 dport=53 [UNREPLIED] src=198.18.0.2 dst=198.18.0.1 sport=5353 dport=40000 mark=0 use=1',
    );
    assert.ok(f && typeof f === 'object');
    assert.equal(f.family, 'IPv4');
    assert.equal(f.reply.sport, 5353);
  });
});
