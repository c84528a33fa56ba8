// FakeIpvs: state kept as the kernel keeps it, and failures where the kernel fails, worded as the client words them.
// Whether those are the kernel's failures is checked apart: test/vm/ipvs-netlink.test.ts runs one scenario against
// the kernel and against this fake and compares every step.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { DEFAULT_TIMEOUTS, FakeIpvs } from '../../../packages/agent/src/netfilter/ipvs/fake.js';
import {
  IPVS_FLAG_HASHED,
  IPVS_FLAG_PERSISTENT,
  realServerKey,
  virtualServerKey,
} from '../../../packages/agent/src/netfilter/ipvs/types.js';
import type { IpvsResult, VirtualServer } from '../../../packages/agent/src/netfilter/ipvs/types.js';

const vs4: VirtualServer = {
  address: '198.18.0.10',
  port: 80,
  protocol: 'TCP',
  scheduler: 'rr',
  flags: 0,
  timeout: 0,
};
const vs6: VirtualServer = {
  address: '2001:DB8::0:10',
  port: 53,
  protocol: 'UDP',
  scheduler: 'wrr',
  flags: IPVS_FLAG_PERSISTENT | IPVS_FLAG_HASHED,
  timeout: 10800,
};
const rs = { address: '198.18.1.1', port: 8080, weight: 1 };

function errnoOf(r: IpvsResult): number {
  return r.ok ? 0 : r.errno;
}

function withTwo(): FakeIpvs {
  const f = new FakeIpvs();
  assert.deepEqual(f.addVirtualServer(vs4), { ok: true });
  assert.deepEqual(f.addVirtualServer(vs6), { ok: true });
  return f;
}

describe('FakeIpvs', () => {
  test('keys: protocol/address:port, IPv6 in brackets, canonical', () => {
    assert.equal(virtualServerKey(vs4), 'TCP/198.18.0.10:80');
    assert.equal(virtualServerKey(vs6), 'UDP/[2001:db8::10]:53');
    assert.equal(realServerKey({ address: '2001:db8:0::1', port: 8080 }), '[2001:db8::1]:8080');
    assert.equal(realServerKey(rs), '198.18.1.1:8080');
  });

  test('lists what was added: canonical addresses, HASHED left out, in the order added', () => {
    const f = withTwo();
    const listed = f.listVirtualServers();
    assert.ok(listed.ok);
    assert.deepEqual(listed.value, [vs4, { ...vs6, address: '2001:db8::10', flags: IPVS_FLAG_PERSISTENT }]);
  });

  test('virtual servers: EEXIST on a second add, ENOENT for an unknown scheduler, ESRCH when missing', () => {
    const f = withTwo();
    const again = f.addVirtualServer({ ...vs6, address: '2001:db8::10', scheduler: 'rr' });
    assert.deepEqual(again, {
      ok: false,
      errno: 17,
      operation: 'add virtual server UDP/[2001:db8::10]:53 (rr)',
      message: 'add virtual server UDP/[2001:db8::10]:53 (rr): File exists',
    });
    const noSuch = f.addVirtualServer({ ...vs4, port: 81, scheduler: 'nosuch' });
    assert.equal(errnoOf(noSuch), 2);
    assert.match(
      noSuch.ok ? '' : noSuch.message,
      /no scheduler "nosuch" \(is the ip_vs_nosuch module available\?\)/,
    );
    const missing = { ...vs4, port: 99 };
    assert.equal(errnoOf(f.updateVirtualServer(missing)), 3);
    assert.equal(errnoOf(f.deleteVirtualServer(missing)), 3);
    assert.equal(errnoOf(f.updateVirtualServer({ ...vs4, scheduler: 'nosuch' })), 2);
  });

  test('an update changes scheduler, flags and timeout; a delete takes the real servers with it', () => {
    const f = withTwo();
    const changed = { ...vs4, scheduler: 'sh', flags: IPVS_FLAG_PERSISTENT, timeout: 60 };
    assert.ok(f.updateVirtualServer(changed).ok);
    assert.ok(f.addRealServer(vs4, rs).ok);
    const listed = f.listVirtualServers();
    assert.ok(listed.ok);
    assert.deepEqual(listed.value[0], changed);
    assert.ok(f.deleteVirtualServer(vs4).ok);
    assert.ok(f.addVirtualServer(vs4).ok);
    assert.deepEqual(f.listRealServers(vs4), { ok: true, value: [] });
  });

  test('real servers: ESRCH without their service, EEXIST, ENOENT when missing, EINVAL across families', () => {
    const f = withTwo();
    const nowhere = { ...vs4, port: 99 };
    assert.equal(errnoOf(f.addRealServer(nowhere, rs)), 3);
    assert.equal(errnoOf(f.deleteRealServer(nowhere, rs)), 3);
    assert.ok(f.addRealServer(vs4, rs).ok);
    assert.equal(errnoOf(f.addRealServer(vs4, { ...rs, weight: 9 })), 17);
    assert.equal(errnoOf(f.updateRealServer(vs4, { ...rs, port: 9 })), 2);
    assert.equal(errnoOf(f.deleteRealServer(vs4, { ...rs, port: 9 })), 2);
    assert.equal(errnoOf(f.addRealServer(vs4, { address: '2001:db8::1', port: 1, weight: 1 })), 22);
    assert.equal(errnoOf(f.deleteRealServer(vs4, { address: '2001:db8::1', port: 1, weight: 1 })), 2);
    assert.equal(errnoOf(f.addRealServer(vs4, { ...rs, port: 1, weight: 0x80000000 })), 34);
    assert.ok(f.updateRealServer(vs4, { ...rs, weight: 5 }).ok);
    assert.deepEqual(f.listRealServers(vs4), {
      ok: true,
      value: [{ ...rs, weight: 5, activeConnections: 0, inactiveConnections: 0 }],
    });
    assert.deepEqual(f.listRealServers(nowhere), { ok: true, value: [] }, 'the kernel lists none, no error');
  });

  test('values that cannot be sent are EINVAL, with the reason', () => {
    const f = new FakeIpvs();
    const r = f.addVirtualServer({ ...vs4, address: '198.18.0' });
    assert.equal(errnoOf(r), 22);
    assert.match(r.ok ? '' : r.message, /"198\.18\.0" is not an IP address/);
    assert.equal(errnoOf(f.addRealServer(vs4, { ...rs, port: -1 })), 22);
    assert.equal(errnoOf(f.setTimeouts({ tcp: 1.5, tcpFin: 0, udp: 0 })), 22);
  });

  test('flush, timeouts (a zero leaves one as it was), and a closed handle', () => {
    const f = withTwo();
    assert.ok(f.flush().ok);
    assert.deepEqual(f.listVirtualServers(), { ok: true, value: [] });
    assert.deepEqual(f.getTimeouts(), { ok: true, value: DEFAULT_TIMEOUTS });
    assert.ok(f.setTimeouts({ tcp: 901, tcpFin: 0, udp: 301 }).ok);
    assert.deepEqual(f.getTimeouts(), { ok: true, value: { tcp: 901, tcpFin: 120, udp: 301 } });
    assert.equal(errnoOf(f.setTimeouts({ tcp: 0x7fffffff, tcpFin: 0, udp: 0 })), 22);
    f.close();
    const closed = f.listVirtualServers();
    assert.equal(closed.ok ? 0 : closed.errno, 9);
    assert.equal(f.calls.at(-1), 'list virtual servers');
  });
});
