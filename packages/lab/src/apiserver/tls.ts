// A self-signed serving certificate made at start. kubectl sends a bearer token only to https:// servers
// (client-go's clientcmd drops user credentials for plain http), so the lab serves TLS; the certificate is its
// own CA and goes into the kubeconfig as certificate-authority-data. Node can sign but not build certificates,
// hence the small DER encoder (X.509 v3, ECDSA P-256 with SHA-256, SANs 127.0.0.1 and localhost).
import { createPrivateKey, generateKeyPairSync, randomBytes, sign } from 'node:crypto';

function len(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let v = n; v > 0; v >>= 8) bytes.unshift(v & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}
const tlv = (tag: number, body: Buffer): Buffer =>
  Buffer.concat([Buffer.from([tag]), len(body.length), body]);
const seq = (...items: Buffer[]): Buffer => tlv(0x30, Buffer.concat(items));
const set = (...items: Buffer[]): Buffer => tlv(0x31, Buffer.concat(items));
const ctx = (n: number, body: Buffer, constructed = true): Buffer =>
  tlv((constructed ? 0xa0 : 0x80) | n, body);

function oid(text: string): Buffer {
  const parts = text.split('.').map(Number);
  const out: number[] = [40 * (parts[0] ?? 0) + (parts[1] ?? 0)];
  for (const p of parts.slice(2)) {
    const chunk: number[] = [p & 0x7f];
    for (let v = p >> 7; v > 0; v >>= 7) chunk.unshift((v & 0x7f) | 0x80);
    out.push(...chunk);
  }
  return tlv(0x06, Buffer.from(out));
}
const utf8 = (s: string): Buffer => tlv(0x0c, Buffer.from(s, 'utf8'));
const bool = (b: boolean): Buffer => tlv(0x01, Buffer.from([b ? 0xff : 0]));
const octets = (b: Buffer): Buffer => tlv(0x04, b);
const bits = (b: Buffer): Buffer => tlv(0x03, Buffer.concat([Buffer.from([0]), b]));
function integer(b: Buffer): Buffer {
  const body = (b[0] ?? 0) & 0x80 ? Buffer.concat([Buffer.from([0]), b]) : b;
  return tlv(0x02, body);
}
function utcTime(d: Date): Buffer {
  const p = (n: number): string => String(n).padStart(2, '0');
  const s = `${p(d.getUTCFullYear() % 100)}${p(d.getUTCMonth() + 1)}${p(d.getUTCDate())}${p(d.getUTCHours())}${p(d.getUTCMinutes())}${p(d.getUTCSeconds())}Z`;
  return tlv(0x17, Buffer.from(s, 'ascii'));
}

const ECDSA_SHA256 = seq(oid('1.2.840.10045.4.3.2'));

export interface ServingCertificate {
  readonly certPem: string;
  readonly keyPem: string;
}

export function selfSignedCertificate(
  commonName = 'kpts-lab-apiserver',
  now = Date.now(),
): ServingCertificate {
  const { publicKey, privateKey } = generateKeyPairSync('ec', { namedCurve: 'prime256v1' });
  const spki = publicKey.export({ type: 'spki', format: 'der' });
  const name = seq(set(seq(oid('2.5.4.3'), utf8(commonName))));
  const serial = randomBytes(16);
  // Positive (high bit clear) and with a non-zero first byte: DER integers are minimal, and a leading 0x00 before
  // a byte below 0x80 is "illegal padding" to OpenSSL, which then refuses the certificate (1 start in 256).
  serial[0] = ((serial[0] ?? 0) & 0x7f) | 0x40;
  const san = seq(ctx(2, Buffer.from('localhost'), false), ctx(7, Buffer.from([127, 0, 0, 1]), false));
  const extensions = seq(
    seq(oid('2.5.29.19'), bool(true), octets(seq(bool(true)))), // basicConstraints: CA (it is its own root)
    seq(oid('2.5.29.15'), bool(true), octets(bits(Buffer.from([0xa4])))), // keyUsage: digitalSignature, keyCertSign
    seq(oid('2.5.29.37'), octets(seq(oid('1.3.6.1.5.5.7.3.1')))), // extKeyUsage: serverAuth
    seq(oid('2.5.29.17'), octets(san)),
  );
  const tbs = seq(
    ctx(0, integer(Buffer.from([2]))),
    integer(serial),
    ECDSA_SHA256,
    name,
    seq(utcTime(new Date(now - 60_000)), utcTime(new Date(now + 365 * 24 * 3600 * 1000))),
    name,
    spki,
    ctx(3, extensions),
  );
  const signature = sign(
    'sha256',
    tbs,
    createPrivateKey(privateKey.export({ type: 'pkcs8', format: 'pem' })),
  );
  const der = seq(tbs, ECDSA_SHA256, bits(signature));
  const b64 = der.toString('base64').replace(/(.{64})/g, '$1\n');
  return {
    certPem: `-----BEGIN CERTIFICATE-----\n${b64.trimEnd()}\n-----END CERTIFICATE-----\n`,
    keyPem: String(privateKey.export({ type: 'pkcs8', format: 'pem' })),
  };
}
