// The IPVS request writer against ipvsadm's own messages (recorded.ts: ipvsadm 1.31 on Debian 12's kernel): byte
// for byte where encode.ts says it writes ipvsadm's message, and attribute for attribute, but for the differences it
// states, where it does not. One message is also spelled out from the uapi layout by hand, so that the check does
// not rest on ipvsadm alone. Values that cannot be sent are refused before anything is written.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  flushRequest,
  getFamilyRequest,
  getTimeoutsRequest,
  listRealServersRequest,
  listVirtualServersRequest,
  realServerRequest,
  setTimeoutsRequest,
  virtualServerRequest,
} from '../../../packages/agent/src/netfilter/ipvs/encode.js';
import type { Encoded } from '../../../packages/agent/src/netfilter/ipvs/encode.js';
import {
  IPVS_CMD_DEL_DEST,
  IPVS_CMD_DEL_SERVICE,
  IPVS_CMD_NEW_DEST,
  IPVS_CMD_NEW_SERVICE,
  IPVS_CMD_SET_DEST,
  IPVS_CMD_SET_SERVICE,
} from '../../../packages/agent/src/netfilter/ipvs/protocol.js';
import {
  IPVS_FLAG_HASHED,
  IPVS_FLAG_PERSISTENT,
  IPVS_FLAG_SOURCE_HASH,
} from '../../../packages/agent/src/netfilter/ipvs/types.js';
import type { RealServer, VirtualServer } from '../../../packages/agent/src/netfilter/ipvs/types.js';
import { RECORDED_FAMILY, SENT } from './recorded.js';

/** A recorded request with its port id zeroed (we leave nlmsg_pid to the kernel), and its sequence number. */
function recorded(hex: string): { bytes: Buffer; seq: number } {
  const bytes = Buffer.from(hex, 'hex');
  bytes.writeUInt32LE(0, 12);
  return { bytes, seq: bytes.readUInt32LE(8) };
}

function bytesOf(e: Encoded): Buffer {
  assert.ok(e.ok, e.ok ? '' : e.reason);
  return e.bytes;
}

const tcpRr: VirtualServer = {
  address: '198.18.0.10',
  port: 80,
  protocol: 'TCP',
  scheduler: 'rr',
  flags: 0,
  timeout: 0,
};
const udp6: VirtualServer = {
  address: '2001:db8::10',
  port: 53,
  protocol: 'UDP',
  scheduler: 'wrr',
  flags: IPVS_FLAG_PERSISTENT,
  timeout: 10800,
};
const sctpSh: VirtualServer = {
  address: '198.18.0.11',
  port: 3868,
  protocol: 'SCTP',
  scheduler: 'sh',
  flags: IPVS_FLAG_SOURCE_HASH,
  timeout: 0,
};

/** One attribute as this test reads it: type (with its flag bits), and its payload or its children. */
type Attr = { type: number; hex: string } | { type: number; children: Attr[] };

/** The attributes of a request after nlmsghdr and genlmsghdr; those of types in `nests` read as nested. */
function attrs(buf: Buffer, from = 20, to = buf.readUInt32LE(0), nests = new Set([1, 2])): Attr[] {
  const out: Attr[] = [];
  for (let at = from; at < to;) {
    const len = buf.readUInt16LE(at);
    const type = buf.readUInt16LE(at + 2);
    out.push(
      nests.has(type & 0x3fff)
        ? { type, children: attrs(buf, at + 4, at + len, new Set()) }
        : { type, hex: buf.toString('hex', at + 4, at + len) },
    );
    at += (len + 3) & ~3;
  }
  return out;
}

/** nlmsghdr's type, flags, seq and pid and genlmsghdr's cmd and version. */
function headerOf(buf: Buffer): number[] {
  return [4, 6, 8, 12]
    .map((at, i) => (i < 2 ? buf.readUInt16LE(at) : buf.readUInt32LE(at)))
    .concat([buf[16]!, buf[17]!]);
}

/** Nested attribute `type` of `list` with only the children whose types are in `keep`. */
function keepInNest(list: Attr[], type: number, keep: readonly number[]): Attr[] {
  return list.map((a) =>
    (a.type & 0x3fff) === type && 'children' in a
      ? { type: a.type, children: a.children.filter((c) => keep.includes(c.type)) }
      : a,
  );
}

// A service's identity (AF, PROTOCOL, ADDR, PORT); a destination's (ADDR, PORT, ADDR_FAMILY); its whole self
// without ipvsadm's tunnel attributes (TUN_TYPE 13, TUN_PORT 14, TUN_FLAGS 15).
const SERVICE_IDENTITY = [1, 2, 3, 4];
const DEST_IDENTITY = [1, 2, 11];
const DEST_WITHOUT_TUNNEL = [1, 2, 3, 4, 5, 6, 11];

describe('IPVS requests: ipvsadm’s bytes', () => {
  const same = (ours: Buffer, hex: string): void =>
    assert.equal(ours.toString('hex'), recorded(hex).bytes.toString('hex'));

  test('GETFAMILY "IPVS" to the controller', () => {
    same(getFamilyRequest('IPVS', recorded(SENT.getFamily).seq), SENT.getFamily);
  });

  test('adding services: TCP rr, UDP over IPv6 persistent wrr, SCTP sh hashing the source port', () => {
    for (const [vs, hex] of [
      [tcpRr, SENT.addTcpRr],
      [udp6, SENT.addUdp6WrrPersistent],
      [sctpSh, SENT.addSctpShPort],
    ] as const) {
      same(
        bytesOf(virtualServerRequest(RECORDED_FAMILY, IPVS_CMD_NEW_SERVICE, vs, recorded(hex).seq, true)),
        hex,
      );
    }
  });

  test('editing a service (wrr, persistent 60 s), and HASHED never sent', () => {
    const edit = { ...tcpRr, scheduler: 'wrr', flags: IPVS_FLAG_PERSISTENT, timeout: 60 };
    const seq = recorded(SENT.editServiceWrrPersistent).seq;
    same(
      bytesOf(virtualServerRequest(RECORDED_FAMILY, IPVS_CMD_SET_SERVICE, edit, seq, true)),
      SENT.editServiceWrrPersistent,
    );
    const hashed = { ...edit, flags: IPVS_FLAG_PERSISTENT | IPVS_FLAG_HASHED };
    same(
      bytesOf(virtualServerRequest(RECORDED_FAMILY, IPVS_CMD_SET_SERVICE, hashed, seq, true)),
      SENT.editServiceWrrPersistent,
    );
  });

  test('dumps: every service; one service’s destinations', () => {
    same(listVirtualServersRequest(RECORDED_FAMILY, recorded(SENT.dumpServices).seq), SENT.dumpServices);
    for (const [vs, hex] of [
      [tcpRr, SENT.dumpDestsTcp],
      [sctpSh, SENT.dumpDestsSctp],
      [udp6, SENT.dumpDestsUdp6],
    ] as const) {
      same(bytesOf(listRealServersRequest(RECORDED_FAMILY, vs, recorded(hex).seq)), hex);
    }
  });

  test('timeouts (set 901 121 301, get) and flush', () => {
    const t = { tcp: 901, tcpFin: 121, udp: 301 };
    same(bytesOf(setTimeoutsRequest(RECORDED_FAMILY, t, recorded(SENT.setTimeouts).seq)), SENT.setTimeouts);
    same(getTimeoutsRequest(RECORDED_FAMILY, recorded(SENT.getTimeouts).seq), SENT.getTimeouts);
    same(flushRequest(RECORDED_FAMILY, recorded(SENT.flush).seq), SENT.flush);
  });

  test('a non-canonical address is the same request as its canonical text', () => {
    const seq = recorded(SENT.addUdp6WrrPersistent).seq;
    const sloppy = { ...udp6, address: '2001:DB8:0:0::0010' };
    same(
      bytesOf(virtualServerRequest(RECORDED_FAMILY, IPVS_CMD_NEW_SERVICE, sloppy, seq, true)),
      SENT.addUdp6WrrPersistent,
    );
  });
});

describe('IPVS requests: ipvsadm’s attributes, but for the stated differences', () => {
  const rs1: RealServer = { address: '198.18.1.1', port: 8080, weight: 3 };
  const rs6: RealServer = { address: '2001:db8:1::1', port: 5353, weight: 2 };

  /** Ours against ipvsadm's: same headers; attributes as `expected` makes them from ipvsadm's. */
  function compare(ours: Buffer, hex: string, expected: (theirs: Attr[]) => Attr[]): void {
    const theirs = recorded(hex).bytes;
    assert.deepEqual(headerOf(ours), headerOf(theirs));
    assert.deepEqual(attrs(ours), expected(attrs(theirs)));
    assert.equal(ours.readUInt32LE(0), ours.length, 'nlmsg_len is the message’s length');
  }

  const destCommand = (theirs: Attr[], dest: readonly number[]): Attr[] =>
    keepInNest(keepInNest(theirs, 1, SERVICE_IDENTITY), 2, dest);

  test('adding and editing a destination: the service by its identity, no tunnel attributes', () => {
    const add = (vs: VirtualServer, rs: RealServer, hex: string, cmd = IPVS_CMD_NEW_DEST): void =>
      compare(bytesOf(realServerRequest(RECORDED_FAMILY, cmd, vs, rs, recorded(hex).seq, true)), hex, (t) =>
        destCommand(t, DEST_WITHOUT_TUNNEL),
      );
    add(tcpRr, rs1, SENT.addDestTcp);
    add(udp6, rs6, SENT.addDestUdp6);
    add(tcpRr, { ...rs1, weight: 5 }, SENT.editDestTcp, IPVS_CMD_SET_DEST);
  });

  test('deleting a service or a destination: identities only', () => {
    const missing = { ...tcpRr, address: '198.18.0.99' };
    const seq = recorded(SENT.deleteMissingService).seq;
    compare(
      bytesOf(virtualServerRequest(RECORDED_FAMILY, IPVS_CMD_DEL_SERVICE, missing, seq, false)),
      SENT.deleteMissingService,
      (t) => keepInNest(t, 1, SERVICE_IDENTITY),
    );
    const gone = { address: '198.18.1.9', port: 8080, weight: 1 };
    const dseq = recorded(SENT.deleteMissingDest).seq;
    compare(
      bytesOf(realServerRequest(RECORDED_FAMILY, IPVS_CMD_DEL_DEST, tcpRr, gone, dseq, false)),
      SENT.deleteMissingDest,
      (t) => destCommand(t, DEST_IDENTITY),
    );
  });
});

describe('IPVS requests: the uapi layout by hand', () => {
  test('NEW_DEST [2001:db8:1::1]:5353 weight 7 on UDP [2001:db8::10]:53', () => {
    const ours = bytesOf(
      realServerRequest(
        0x20,
        IPVS_CMD_NEW_DEST,
        udp6,
        { address: '2001:db8:1::1', port: 5353, weight: 7 },
        9,
        true,
      ),
    );
    // Little-endian host: lengths, types and integers below are LE; addresses and ports big-endian.
    const expected = [
      '8c000000', // nlmsg_len 140: 20 of headers, 48 of service, 72 of destination
      '2000', // nlmsg_type: the IPVS family's id
      '0500', // NLM_F_REQUEST | NLM_F_ACK
      '09000000', // nlmsg_seq 9
      '00000000', // nlmsg_pid: the kernel's to fill
      '05010000', // genlmsghdr: IPVS_CMD_NEW_DEST, version 1, reserved
      '30000180', // IPVS_CMD_ATTR_SERVICE | NLA_F_NESTED, 48 bytes
      '06000100' + '0a00' + '0000', // IPVS_SVC_ATTR_AF AF_INET6, padding
      '06000200' + '1100' + '0000', // IPVS_SVC_ATTR_PROTOCOL IPPROTO_UDP
      '14000300' + '20010db8000000000000000000000010', // IPVS_SVC_ATTR_ADDR 2001:db8::10
      '06000400' + '0035' + '0000', // IPVS_SVC_ATTR_PORT 53, network order
      '48000280', // IPVS_CMD_ATTR_DEST | NLA_F_NESTED, 72 bytes
      '06000b00' + '0a00' + '0000', // IPVS_DEST_ATTR_ADDR_FAMILY AF_INET6
      '14000100' + '20010db8000100000000000000000001', // IPVS_DEST_ATTR_ADDR 2001:db8:1::1
      '06000200' + '14e9' + '0000', // IPVS_DEST_ATTR_PORT 5353
      '08000300' + '00000000', // IPVS_DEST_ATTR_FWD_METHOD IP_VS_CONN_F_MASQ
      '08000400' + '07000000', // IPVS_DEST_ATTR_WEIGHT 7
      '08000500' + '00000000', // IPVS_DEST_ATTR_U_THRESH 0
      '08000600' + '00000000', // IPVS_DEST_ATTR_L_THRESH 0
    ].join('');
    assert.equal(ours.toString('hex'), expected);
  });

  test('NEW_SERVICE IPv4: the netmask 0xffffffff, the flags with a full mask, the scheduler NUL-ended', () => {
    const vs = {
      ...tcpRr,
      scheduler: 'wlc',
      flags: IPVS_FLAG_PERSISTENT | IPVS_FLAG_SOURCE_HASH,
      timeout: 10800,
    };
    const ours = bytesOf(virtualServerRequest(0x21, IPVS_CMD_NEW_SERVICE, vs, 1, true));
    const service = attrs(ours)[0];
    assert.ok(service && 'children' in service);
    assert.deepEqual(service.children, [
      { type: 1, hex: '0200' },
      { type: 2, hex: '0600' },
      { type: 3, hex: 'c612000a' + '00'.repeat(12) },
      { type: 4, hex: '0050' },
      { type: 6, hex: '776c6300' },
      { type: 7, hex: '11000000' + 'ffffffff' },
      { type: 8, hex: '302a0000' },
      { type: 9, hex: 'ffffffff' },
    ]);
  });
});

describe('IPVS requests: values that cannot be sent', () => {
  const cases: [string, Encoded, RegExp][] = [
    [
      'not an address',
      virtualServerRequest(1, IPVS_CMD_NEW_SERVICE, { ...tcpRr, address: '10.0.0' }, 1, true),
      /"10\.0\.0" is not an IP address/,
    ],
    [
      'port out of range',
      virtualServerRequest(1, IPVS_CMD_NEW_SERVICE, { ...tcpRr, port: 70000 }, 1, true),
      /port 70000/,
    ],
    [
      'a protocol IPVS does not have',
      virtualServerRequest(1, IPVS_CMD_NEW_SERVICE, { ...tcpRr, protocol: 'ICMP' as 'TCP' }, 1, true),
      /protocol "ICMP"/,
    ],
    [
      'a fractional timeout',
      virtualServerRequest(1, IPVS_CMD_NEW_SERVICE, { ...tcpRr, timeout: 1.5 }, 1, true),
      /timeout 1\.5/,
    ],
    [
      'a negative weight',
      realServerRequest(1, IPVS_CMD_NEW_DEST, tcpRr, { address: '198.18.1.1', port: 1, weight: -1 }, 1, true),
      /weight -1/,
    ],
    [
      'a real server that is no address',
      realServerRequest(1, IPVS_CMD_DEL_DEST, tcpRr, { address: 'x', port: 1, weight: 1 }, 1, false),
      /"x" is not/,
    ],
    [
      'a timeout that is not a number',
      setTimeoutsRequest(1, { tcp: Number.NaN, tcpFin: 1, udp: 1 }, 1),
      /timeout tcp NaN/,
    ],
  ];
  for (const [name, encoded, reason] of cases) {
    test(name, () => {
      assert.equal(encoded.ok, false);
      if (!encoded.ok) assert.match(encoded.reason, reason);
    });
  }
});
