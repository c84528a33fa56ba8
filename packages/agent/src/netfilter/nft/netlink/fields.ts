// One field of an element key or value, text to bytes and bytes to text, as nft does it for the datatypes the
// kube-proxy tables use. Writing is the element writer's hot path (a cold start at 10,000 Services parses about
// half a million fields), so the parsers read character codes straight from the text, with no split, regex or
// intermediate string, and write into the batch buffer in place. Reading gives the text nft prints (and its JSON
// holds): dotted IPv4, IPv6 compressed as inet_ntop does, protocol names from /etc/protocols, ports as numbers.
import { readFileSync } from 'node:fs';
import type { ElementFieldType } from './schema.js';
import { HOST_LE } from './protocol.js';

// Each write… function reads one field of `text` from `start` up to the next space (no field holds one) or the
// text's end, writes it at `buf[at]` (the buffer is zero-filled, so a field's padding is already zero), and returns
// where the field ended: the space's index or text.length; or -1, and lastFieldProblem() says why. An index, not a
// result object, because this runs half a million times a cold start; and one pass over the characters, since the
// text is read nowhere else.

const C_0 = 48;
const C_9 = 57;
const C_DOT = 46;
const C_COLON = 58;
const C_SPACE = 32;

let problem = '';

/** Why the last write… call that returned -1 refused its text. */
export function lastFieldProblem(): string {
  return problem;
}

function refuse(why: string): number {
  problem = why;
  return -1;
}

/** Where the field starting at `start` ends: the next space, or the text's end. */
export function fieldEnd(text: string, start: number): number {
  const n = text.length;
  let i = start;
  while (i < n && text.charCodeAt(i) !== C_SPACE) i++;
  return i;
}

/** A decimal number without sign or leading zero (nft would read `010` as octal), at most `max`; -1 if not one. */
function decimal(text: string, start: number, end: number, max: number): number {
  const len = end - start;
  if (len === 0 || len > 10) return -1;
  if (len > 1 && text.charCodeAt(start) === C_0) return -1;
  let n = 0;
  for (let i = start; i < end; i++) {
    const c = text.charCodeAt(i) - C_0;
    if (c < 0 || c > 9) return -1;
    n = n * 10 + c;
  }
  return n <= max ? n : -1;
}

export function writeIPv4(text: string, start: number, buf: Buffer, at: number): number {
  const n = text.length;
  let octet = 0;
  let digits = 0;
  let part = 0;
  let i = start;
  for (; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c >= C_0 && c <= C_9) {
      if (digits > 0 && octet === 0) return refuse('not an IPv4 address (leading zero)');
      octet = octet * 10 + (c - C_0);
      if (++digits > 3 || octet > 255) return refuse('not an IPv4 address');
    } else if (c === C_DOT) {
      if (digits === 0 || part === 3) return refuse('not an IPv4 address');
      buf[at + part++] = octet;
      octet = 0;
      digits = 0;
    } else if (c === C_SPACE) {
      break;
    } else {
      return refuse('not an IPv4 address');
    }
  }
  if (digits === 0 || part !== 3) return refuse('not an IPv4 address');
  buf[at + 3] = octet;
  return i;
}

function hexDigit(c: number): number {
  if (c >= C_0 && c <= C_9) return c - C_0;
  const l = c | 0x20;
  return l >= 97 && l <= 102 ? l - 87 : -1;
}

/** Scratch for the groups of one IPv6 address (the hot path allocates nothing). */
const groups = new Uint16Array(8);

export function writeIPv6(text: string, start: number, buf: Buffer, at: number): number {
  const end = fieldEnd(text, start);
  const bad = 'not an IPv6 address';
  let count = 0;
  /** Index in `groups` where `::` stands, or -1. */
  let gap = -1;
  let i = start;
  if (end - start < 2) return refuse(bad);
  if (text.charCodeAt(i) === C_COLON) {
    if (text.charCodeAt(i + 1) !== C_COLON) return refuse(bad);
    gap = 0;
    i += 2;
  }
  while (i < end) {
    // One group: hex digits up to ':' or the end. A dotted IPv4 tail (`64:ff9b::198.18.0.1`) is refused: nft
    // 1.0.6's lexer reads it in some places and not in others, and text nft would refuse must not pass here.
    let value = 0;
    let digits = 0;
    let j = i;
    for (; j < end; j++) {
      const c = text.charCodeAt(j);
      if (c === C_COLON) break;
      const h = hexDigit(c);
      if (h < 0 || ++digits > 4) return refuse(bad);
      value = value * 16 + h;
    }
    if (digits === 0 || count >= 8) return refuse(bad);
    groups[count++] = value;
    if (j >= end) break;
    // j is at ':'.
    if (j + 1 >= end) return refuse(bad);
    if (text.charCodeAt(j + 1) === C_COLON) {
      if (gap >= 0) return refuse(bad);
      gap = count;
      i = j + 2;
    } else {
      i = j + 1;
    }
  }
  if (gap < 0 ? count !== 8 : count > 7) return refuse(bad);
  const zeros = 8 - count;
  let g = 0;
  for (let k = 0; k < 8; k++) {
    let v = 0;
    if (gap < 0 || k < gap) v = groups[g++] as number;
    else if (k >= gap + zeros) v = groups[g++] as number;
    buf[at + 2 * k] = v >> 8;
    buf[at + 2 * k + 1] = v & 255;
  }
  return end;
}

export function writeProto(text: string, start: number, buf: Buffer, at: number): number {
  const end = fieldEnd(text, start);
  const len = end - start;
  const c = text.charCodeAt(start);
  if (len === 3 && c === 116 && text.startsWith('tcp', start)) buf[at] = 6;
  else if (len === 3 && c === 117 && text.startsWith('udp', start)) buf[at] = 17;
  else if (len === 4 && c === 115 && text.startsWith('sctp', start)) buf[at] = 132;
  else {
    const n = decimal(text, start, end, 255);
    if (n < 0) return refuse('not a protocol (tcp, udp, sctp or a number up to 255)');
    buf[at] = n;
  }
  return end;
}

export function writePort(text: string, start: number, buf: Buffer, at: number): number {
  const end = fieldEnd(text, start);
  const n = decimal(text, start, end, 65535);
  if (n < 0) return refuse('not a port (a number up to 65535)');
  buf[at] = n >> 8;
  buf[at + 1] = n & 255;
  return end;
}

export function writeNumgen(text: string, start: number, buf: Buffer, at: number): number {
  const end = fieldEnd(text, start);
  const n = decimal(text, start, end, 0xffffffff);
  if (n < 0) return refuse('not a 32-bit number');
  if (HOST_LE) buf.writeUInt32LE(n, at);
  else buf.writeUInt32BE(n, at);
  return end;
}

function formatIPv4(buf: Buffer, at: number): string {
  return `${buf[at]}.${buf[at + 1]}.${buf[at + 2]}.${buf[at + 3]}`;
}

/**
 * IPv6 text as glibc's inet_ntop writes it (which nft uses): lower-case hex without leading zeros, the longest run
 * of two or more zero groups (the first of equal runs) as `::`, and an IPv4-compatible or -mapped address with its
 * last 32 bits dotted.
 */
export function formatIPv6(buf: Buffer, at: number): string {
  const w: number[] = [];
  for (let k = 0; k < 8; k++) w.push(((buf[at + 2 * k] as number) << 8) | (buf[at + 2 * k + 1] as number));
  let bestStart = -1;
  let bestLen = 0;
  for (let k = 0; k < 8;) {
    if (w[k] !== 0) {
      k++;
      continue;
    }
    let e = k;
    while (e < 8 && w[e] === 0) e++;
    if (e - k > bestLen) {
      bestStart = k;
      bestLen = e - k;
    }
    k = e;
  }
  if (bestLen < 2) bestStart = -1;
  let out = '';
  for (let k = 0; k < 8; k++) {
    if (bestStart >= 0 && k >= bestStart && k < bestStart + bestLen) {
      if (k === bestStart) out += ':';
      continue;
    }
    if (k !== 0) out += ':';
    if (k === 6 && bestStart === 0 && (bestLen === 6 || (bestLen === 5 && w[5] === 0xffff))) {
      return out + formatIPv4(buf, at + 12);
    }
    out += (w[k] as number).toString(16);
  }
  if (bestStart >= 0 && bestStart + bestLen === 8) out += ':';
  return out;
}

let protocolNames: Map<number, string> | undefined;

/**
 * nft names a protocol number as getprotobynumber does (the first name of its line in /etc/protocols), and prints
 * the number when there is none; a host without the file gets numbers from nft too.
 */
function protocolName(n: number): string {
  if (protocolNames === undefined) {
    protocolNames = new Map();
    let text = '';
    try {
      text = readFileSync('/etc/protocols', 'utf8');
    } catch {
      // No file: numbers, as nft.
    }
    for (const line of text.split('\n')) {
      const fields = line.replace(/#.*/, '').trim().split(/\s+/);
      const num = Number(fields[1]);
      if (fields[0] && fields.length >= 2 && Number.isInteger(num) && !protocolNames.has(num)) {
        protocolNames.set(num, fields[0]);
      }
    }
  }
  return protocolNames.get(n) ?? String(n);
}

/** The text of one field at `buf[at]`, as nft prints it. */
export function formatField(type: ElementFieldType, buf: Buffer, at: number): string {
  switch (type) {
    case 'ipv4_addr':
      return formatIPv4(buf, at);
    case 'ipv6_addr':
      return formatIPv6(buf, at);
    case 'inet_proto':
      return protocolName(buf[at] as number);
    case 'inet_service':
      return String(buf.readUInt16BE(at));
    case 'numgen':
      return String(HOST_LE ? buf.readUInt32LE(at) : buf.readUInt32BE(at));
  }
}
