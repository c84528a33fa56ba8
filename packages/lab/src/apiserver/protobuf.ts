// Just enough of Kubernetes' protobuf encoding to accept the bodies kubectl's typed clients send for simple
// kinds (`kubectl create namespace`, `kubectl create configmap`): the "k8s\0" envelope (runtime.Unknown), then
// ObjectMeta's name, generateName, namespace, labels and annotations, and a ConfigMap's data. Other kinds answer
// 415, and clients that send protobuf for them must use JSON (kubectl apply/create -f do).
import type { JsonObject } from './json.js';

type Field = { readonly num: number; readonly wire: number; readonly value: bigint | Buffer };

function readVarint(buf: Buffer, pos: number): [bigint, number] {
  let result = 0n;
  let shift = 0n;
  for (;;) {
    if (pos >= buf.length) throw new Error('truncated varint');
    const b = buf[pos++] ?? 0;
    result |= BigInt(b & 0x7f) << shift;
    if ((b & 0x80) === 0) return [result, pos];
    shift += 7n;
    if (shift > 63n) throw new Error('varint too long');
  }
}

function fields(buf: Buffer): Field[] {
  const out: Field[] = [];
  let pos = 0;
  while (pos < buf.length) {
    const [key, p] = readVarint(buf, pos);
    pos = p;
    const num = Number(key >> 3n);
    const wire = Number(key & 7n);
    if (wire === 0) {
      const [v, q] = readVarint(buf, pos);
      pos = q;
      out.push({ num, wire, value: v });
    } else if (wire === 2) {
      const [l, q] = readVarint(buf, pos);
      const end = q + Number(l);
      if (end > buf.length) throw new Error('truncated field');
      out.push({ num, wire, value: buf.subarray(q, end) });
      pos = end;
    } else if (wire === 1) pos += 8;
    else if (wire === 5) pos += 4;
    else throw new Error(`unsupported wire type ${wire}`);
  }
  return out;
}

const text = (f: Field): string => (Buffer.isBuffer(f.value) ? f.value.toString('utf8') : '');

function stringMapEntry(f: Field): [string, string] {
  let k = '';
  let v = '';
  if (Buffer.isBuffer(f.value))
    for (const e of fields(f.value)) {
      if (e.num === 1) k = text(e);
      if (e.num === 2) v = text(e);
    }
  return [k, v];
}

function objectMeta(buf: Buffer): JsonObject {
  const meta: JsonObject = {};
  const labels: Record<string, string> = {};
  const annotations: Record<string, string> = {};
  for (const f of fields(buf)) {
    if (f.num === 1) meta.name = text(f);
    else if (f.num === 2) meta.generateName = text(f);
    else if (f.num === 3) meta.namespace = text(f);
    else if (f.num === 11) {
      const [k, v] = stringMapEntry(f);
      labels[k] = v;
    } else if (f.num === 12) {
      const [k, v] = stringMapEntry(f);
      annotations[k] = v;
    }
  }
  if (Object.keys(labels).length > 0) meta.labels = labels;
  if (Object.keys(annotations).length > 0) meta.annotations = annotations;
  return meta;
}

const MAGIC = Buffer.from([0x6b, 0x38, 0x73, 0x00]);

/** Decodes a protobuf body for the given kind, or returns an error message. */
export function decodeProtobuf(body: Buffer, kind: string): { value: JsonObject } | { error: string } {
  if (kind !== 'Namespace' && kind !== 'ConfigMap')
    return { error: `protobuf bodies are accepted for Namespace and ConfigMap only, not ${kind}; send JSON` };
  if (body.length < 4 || !body.subarray(0, 4).equals(MAGIC))
    return { error: 'protobuf body without the k8s envelope' };
  try {
    let raw: Buffer | undefined;
    let apiVersion = '';
    let gotKind = '';
    for (const f of fields(body.subarray(4))) {
      if (f.num === 1 && Buffer.isBuffer(f.value))
        for (const t of fields(f.value)) {
          if (t.num === 1) apiVersion = text(t);
          if (t.num === 2) gotKind = text(t);
        }
      if (f.num === 2 && Buffer.isBuffer(f.value)) raw = f.value;
    }
    if (!raw) return { error: 'protobuf envelope without an object' };
    const obj: JsonObject = { apiVersion, kind: gotKind || kind, metadata: {} };
    const data: Record<string, string> = {};
    for (const f of fields(raw)) {
      if (f.num === 1 && Buffer.isBuffer(f.value)) obj.metadata = objectMeta(f.value);
      else if (kind === 'ConfigMap' && f.num === 2) {
        const [k, v] = stringMapEntry(f);
        data[k] = v;
      }
    }
    if (kind === 'ConfigMap' && Object.keys(data).length > 0) obj.data = data;
    return { value: obj };
  } catch (e) {
    return { error: `malformed protobuf body: ${e instanceof Error ? e.message : String(e)}` };
  }
}
