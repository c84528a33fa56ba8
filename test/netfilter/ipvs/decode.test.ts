// The IPVS answer reader against the kernel's own answers (recorded.ts: Debian 12's kernel answering ipvsadm): the
// controller's family id, a dump of services and of destinations gathered from their datagrams up to NLMSG_DONE
// and read as what ipvsadm listed, the timeouts, and error replies mapped to their errno. Where the recording has
// no example (an extended ACK's text, a firewall-mark service, a kernel before 3.18), messages are made by hand
// from the uapi layout.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { Answer } from '../../../packages/agent/src/netfilter/ipvs/decode.js';
import {
  absorbDatagram,
  decodeFamilyId,
  decodeRealServer,
  decodeTimeouts,
  decodeVirtualServer,
  newAnswer,
} from '../../../packages/agent/src/netfilter/ipvs/decode.js';
import { AF_INET, AF_INET6 } from '../../../packages/agent/src/netfilter/ipvs/protocol.js';
import { RECEIVED } from './recorded.js';

/** Feeds the recorded datagrams to a fresh answer for request `seq` (each datagram's own sequence number). */
function answerOf(...hex: string[]): Answer {
  const answer = newAnswer();
  for (const h of hex) {
    const buf = Buffer.from(h, 'hex');
    absorbDatagram(buf, buf.length, buf.readUInt32LE(8), answer);
  }
  return answer;
}

/** A message: nlmsghdr (type, flags, seq 7) + `body` (hex). */
function message(type: number, flags: number, body: string): string {
  const b = Buffer.alloc(16);
  b.writeUInt32LE(16 + body.length / 2, 0);
  b.writeUInt16LE(type, 4);
  b.writeUInt16LE(flags, 6);
  b.writeUInt32LE(7, 8);
  return b.toString('hex') + body;
}

describe('IPVS answers: recorded from the kernel', () => {
  test('the controller’s answer to GETFAMILY "IPVS", then its ACK', () => {
    const answer = answerOf(RECEIVED.family, RECEIVED.familyAck);
    assert.equal(answer.done, true);
    assert.equal(answer.errno, 0);
    assert.equal(answer.messages.length, 1);
    assert.equal(decodeFamilyId(answer.messages[0]!), 0x20);
  });

  test('a dump of services: three in one datagram, then NLMSG_DONE; HASHED left out of the flags', () => {
    const answer = answerOf(RECEIVED.servicesDump, RECEIVED.servicesDone);
    assert.equal(answer.done, true);
    assert.equal(answer.errno, 0);
    // What `ipvsadm -Ln` printed from the same messages: "TCP 198.18.0.10:80 rr", "SCTP 198.18.0.11:3868 sh
    // (sh-port)", "UDP [2001:db8::10]:53 wrr persistent 10800".
    assert.deepEqual(answer.messages.map(decodeVirtualServer), [
      { address: '198.18.0.10', port: 80, protocol: 'TCP', scheduler: 'rr', flags: 0, timeout: 0 },
      { address: '198.18.0.11', port: 3868, protocol: 'SCTP', scheduler: 'sh', flags: 0x10, timeout: 0 },
      { address: '2001:db8::10', port: 53, protocol: 'UDP', scheduler: 'wrr', flags: 0x1, timeout: 10800 },
    ]);
  });

  test('dumps of destinations: one IPv4, one IPv6, and none', () => {
    const tcp = answerOf(RECEIVED.destsTcp, RECEIVED.destsTcpDone);
    assert.deepEqual(
      tcp.messages.map((m) => decodeRealServer(m, AF_INET)),
      [{ address: '198.18.1.1', port: 8080, weight: 5, activeConnections: 0, inactiveConnections: 0 }],
    );
    const udp6 = answerOf(RECEIVED.destsUdp6, RECEIVED.destsUdp6Done);
    assert.equal(udp6.done, true);
    assert.deepEqual(
      udp6.messages.map((m) => decodeRealServer(m, AF_INET6)),
      [{ address: '2001:db8:1::1', port: 5353, weight: 2, activeConnections: 0, inactiveConnections: 0 }],
    );
    const none = answerOf(RECEIVED.destsSctpDone);
    assert.deepEqual([none.done, none.errno, none.messages.length], [true, 0, 0]);
  });

  test('the timeouts GET_CONFIG answers', () => {
    const answer = answerOf(RECEIVED.timeouts);
    assert.equal(answer.done, false, 'an ACK still follows');
    assert.deepEqual(decodeTimeouts(answer.messages[0]!), { tcp: 901, tcpFin: 121, udp: 301 });
  });

  test('errors: EEXIST, ENOENT for a scheduler, ESRCH, ENOENT for a destination', () => {
    const errnos = [
      RECEIVED.existsError,
      RECEIVED.noSchedulerError,
      RECEIVED.noServiceError,
      RECEIVED.noDestError,
    ].map((hex) => {
      const a = answerOf(hex);
      assert.equal(a.done, true);
      assert.equal(a.messages.length, 0);
      return a.errno;
    });
    assert.deepEqual(errnos, [17, 2, 3, 2]);
  });

  test('messages of another request are not this one’s', () => {
    const buf = Buffer.from(RECEIVED.servicesDump + RECEIVED.servicesDone, 'hex');
    const answer = newAnswer();
    absorbDatagram(buf, buf.length, 12345, answer);
    assert.deepEqual([answer.done, answer.messages.length], [false, 0]);
  });
});

describe('IPVS answers: made from the uapi layout', () => {
  test('an error with the extended ACK’s text (capped, NLM_F_ACK_TLVS)', () => {
    const echoed = message(0x20, 0x5, '01010000').slice(0, 32); // the request's header only
    const text = Buffer.from('Attribute failed policy validation\0').toString('hex');
    const tlv = Buffer.alloc(4);
    tlv.writeUInt16LE(4 + text.length / 2, 0);
    tlv.writeUInt16LE(1, 2); // NLMSGERR_ATTR_MSG
    const pad = '00'.repeat((4 - ((text.length / 2) % 4)) % 4);
    const hex = message(2, 0x100 | 0x200, 'eaffffff' + echoed + tlv.toString('hex') + text + pad);
    const a = answerOf(hex);
    assert.deepEqual([a.done, a.errno, a.kernelText], [true, 22, 'Attribute failed policy validation']);
  });

  test('a dump that ends in an error (NLMSG_DONE carrying -EINVAL)', () => {
    const a = answerOf(message(3, 0x2, 'eaffffff'));
    assert.deepEqual([a.done, a.errno], [true, 22]);
  });

  test('a firewall-mark service is skipped, a service without an address is a problem', () => {
    // genlmsghdr NEW_SERVICE; IPVS_CMD_ATTR_SERVICE { AF 2, FWMARK 7, SCHED "rr" … }.
    const fwmark = message(
      0x20,
      2,
      '01010000' + '1c000100' + '060001000200' + '0000' + '0800050007000000' + '07000600727200' + '00',
    );
    assert.deepEqual(decodeVirtualServer(Buffer.from(fwmark, 'hex')), { skip: 'firewall-mark service 7' });
    const noAddress = message(
      0x20,
      2,
      '01010000' + '14000100' + '060001000200' + '0000' + '060002000600' + '0000',
    );
    const decoded = decodeVirtualServer(Buffer.from(noAddress, 'hex'));
    assert.ok('problem' in decoded, JSON.stringify(decoded));
  });

  test('a destination without IPVS_DEST_ATTR_ADDR_FAMILY (kernels before 3.18) has its service’s family', () => {
    // IPVS_CMD_ATTR_DEST { ADDR 2001:db8::5 (16 bytes), PORT 80, WEIGHT 1 }.
    const dest =
      '28000200' +
      '14000100' +
      '20010db8000000000000000000000005' +
      '060002000050' +
      '0000' +
      '0800040001000000';
    const m = Buffer.from(message(0x20, 2, '05010000' + dest), 'hex');
    assert.deepEqual(decodeRealServer(m, AF_INET6), {
      address: '2001:db8::5',
      port: 80,
      weight: 1,
      activeConnections: 0,
      inactiveConnections: 0,
    });
  });
});
