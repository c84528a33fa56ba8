// Request bodies in Kubernetes' protobuf encoding, which kubectl's typed clients send (`kubectl create service`,
// `create deployment`, `create namespace`, …): the "k8s\0" prefix, a runtime.Unknown envelope naming apiVersion
// and kind, and the object's bytes. One generic reader of the protobuf wire format walks those bytes along the
// message tables of protobuf-schema.ts and builds the JSON object the same request would have sent as JSON, so
// validation and defaulting downstream are the same for both. Fields the tables do not describe are skipped (a
// newer client may send more); bytes that do not parse are a 400 naming the field. Answers stay JSON: kubectl asks
// for protobuf first but accepts JSON.
import type { JsonObject } from './json.js';
import { OBJECT_SCHEMAS, type FieldSchema, type MessageSchema, type ValueType } from './protobuf-schema.js';

class ProtobufError extends Error {}

const WIRE_VARINT = 0;
const WIRE_FIXED64 = 1;
const WIRE_BYTES = 2;
const WIRE_FIXED32 = 5;

/** One field as it is on the wire: a varint (wire type 0) or a length-delimited run of bytes (wire type 2). */
interface WireField {
  readonly num: number;
  readonly wire: number;
  readonly varint: bigint;
  readonly bytes: Buffer;
}

function readVarint(buf: Buffer, pos: number, where: string): [bigint, number] {
  let result = 0n;
  let shift = 0n;
  for (;;) {
    if (pos >= buf.length) throw new ProtobufError(`${where}: truncated varint`);
    const b = buf[pos++] ?? 0;
    result |= BigInt(b & 0x7f) << shift;
    if ((b & 0x80) === 0) return [result, pos];
    shift += 7n;
    if (shift > 63n) throw new ProtobufError(`${where}: varint longer than 10 bytes`);
  }
}

const EMPTY = Buffer.alloc(0);

/** The fields of one message, in wire order; fixed-width fields (no Kubernetes type has one) are stepped over. */
function* wireFields(buf: Buffer, where: string): Generator<WireField> {
  let pos = 0;
  while (pos < buf.length) {
    const [key, afterKey] = readVarint(buf, pos, where);
    const num = Number(key >> 3n);
    const wire = Number(key & 7n);
    if (num === 0) throw new ProtobufError(`${where}: field number 0 at byte ${pos}`);
    pos = afterKey;
    if (wire === WIRE_VARINT) {
      const [v, next] = readVarint(buf, pos, `${where} field ${num}`);
      pos = next;
      yield { num, wire, varint: v, bytes: EMPTY };
    } else if (wire === WIRE_BYTES) {
      const [len, start] = readVarint(buf, pos, `${where} field ${num}`);
      const end = start + Number(len);
      if (end > buf.length)
        throw new ProtobufError(`${where} field ${num}: length ${len} runs past the end of the message`);
      pos = end;
      yield { num, wire, varint: 0n, bytes: buf.subarray(start, end) };
    } else if (wire === WIRE_FIXED64 || wire === WIRE_FIXED32) {
      pos += wire === WIRE_FIXED64 ? 8 : 4;
      if (pos > buf.length) throw new ProtobufError(`${where} field ${num}: truncated fixed-width value`);
    } else throw new ProtobufError(`${where} field ${num}: unsupported wire type ${wire}`);
  }
}

const isVarintType = (t: ValueType): boolean => t === 'bool' || t === 'int32' || t === 'int64';

function scalarFromVarint(v: bigint, type: ValueType): unknown {
  if (type === 'bool') return v !== 0n;
  // Negative int32s travel sign-extended to 64 bits.
  return Number(BigInt.asIntN(type === 'int32' ? 32 : 64, v));
}

function expectWire(f: WireField, want: number, type: ValueType, at: string): void {
  if (f.wire !== want) {
    const name = typeof type === 'string' ? type : type.name;
    throw new ProtobufError(`${at}: ${name} needs wire type ${want}, got wire type ${f.wire}`);
  }
}

/** One value of the field's type; messages come back as their JSON (for IntOrString etc., a single value). */
function decodeValue(f: WireField, type: ValueType, at: string): unknown {
  if (isVarintType(type)) {
    expectWire(f, WIRE_VARINT, type, at);
    return scalarFromVarint(f.varint, type);
  }
  expectWire(f, WIRE_BYTES, type, at);
  if (type === 'string') return f.bytes.toString('utf8');
  if (type === 'bytes') return f.bytes.toString('base64');
  if (typeof type === 'string') throw new ProtobufError(`${at}: unknown type ${type}`);
  const obj = decodeMessage(f.bytes, type, at);
  return type.toJson ? type.toJson(obj) : obj;
}

const isZero = (v: unknown): boolean => v === undefined || v === '' || v === 0 || v === false;

function appendRepeated(out: JsonObject, field: FieldSchema, f: WireField, at: string): void {
  const list = (Array.isArray(out[field.json]) ? out[field.json] : (out[field.json] = [])) as unknown[];
  // Repeated elements keep their zeros: apiGroups [""] is the core group.
  list.push(decodeValue(f, field.type, `${at}[${list.length}]`));
}

function addMapEntry(out: JsonObject, field: FieldSchema, f: WireField, at: string): void {
  if (!field.entry) throw new ProtobufError(`${at}: map field without an entry schema`);
  expectWire(f, WIRE_BYTES, field.entry, at);
  const entry = decodeMessage(f.bytes, field.entry, at);
  const key = typeof entry.key === 'string' ? entry.key : '';
  const value = entry.value ?? emptyValue(field.type);
  const map = (out[field.json] ??= {}) as JsonObject;
  map[key] = value;
}

/** What a map entry without a value holds: the type's zero, as JSON writes it. */
function emptyValue(type: ValueType): unknown {
  if (typeof type !== 'string') return type.toJson ? type.toJson({}) : {};
  return isVarintType(type) ? scalarFromVarint(0n, type) : '';
}

/** A message's JSON object, built along its schema; `at` names it in errors ("Service.spec.ports[0]"). */
function decodeMessage(buf: Buffer, schema: MessageSchema, at: string): JsonObject {
  const out: JsonObject = {};
  for (const f of wireFields(buf, at)) {
    const field = schema.fields.get(f.num);
    if (!field) continue;
    const here = `${at}.${field.json}`;
    if (field.shape === 'inline') {
      expectWire(f, WIRE_BYTES, field.type, at);
      if (typeof field.type === 'string') throw new ProtobufError(`${at}: inline field of scalar type`);
      Object.assign(out, decodeMessage(f.bytes, field.type, at));
    } else if (field.shape === 'map') addMapEntry(out, field, f, here);
    else if (field.shape === 'repeated') appendRepeated(out, field, f, here);
    else {
      const v = decodeValue(f, field.type, here);
      // A later occurrence replaces an earlier one, as protobuf's last-one-wins rule says.
      if (field.keepZero ? v !== undefined : !isZero(v)) out[field.json] = v;
      else delete out[field.json];
    }
  }
  return out;
}

const MAGIC = Buffer.from([0x6b, 0x38, 0x73, 0x00]);

interface Envelope {
  apiVersion: string;
  kind: string;
  raw?: Buffer;
  contentEncoding: string;
}

/** runtime.Unknown: typeMeta (apiVersion 1, kind 2) 1, raw 2, contentEncoding 3, contentType 4. */
function readEnvelope(buf: Buffer): Envelope {
  const env: Envelope = { apiVersion: '', kind: '', contentEncoding: '' };
  for (const f of wireFields(buf, 'envelope')) {
    if (f.wire !== WIRE_BYTES) continue;
    if (f.num === 1)
      for (const t of wireFields(f.bytes, 'envelope.typeMeta')) {
        if (t.wire !== WIRE_BYTES) continue;
        if (t.num === 1) env.apiVersion = t.bytes.toString('utf8');
        if (t.num === 2) env.kind = t.bytes.toString('utf8');
      }
    else if (f.num === 2) env.raw = f.bytes;
    else if (f.num === 3) env.contentEncoding = f.bytes.toString('utf8');
  }
  return env;
}

/** The outcome: the object, or why not (unsupported: a kind or encoding the lab does not take, answered 415). */
export type ProtobufDecoded = { value: JsonObject } | { error: string; unsupported: boolean };

/** Decodes a protobuf request body sent to a resource of the given kind. */
export function decodeProtobuf(body: Buffer, kind: string): ProtobufDecoded {
  if (body.length < MAGIC.length || !body.subarray(0, MAGIC.length).equals(MAGIC))
    return { error: 'protobuf body does not start with the "k8s\\0" envelope prefix', unsupported: false };
  try {
    const env = readEnvelope(body.subarray(MAGIC.length));
    if (env.contentEncoding)
      return {
        error: `protobuf envelope with content encoding ${env.contentEncoding}; send JSON`,
        unsupported: true,
      };
    if (!env.raw || env.raw.length === 0)
      return {
        error: 'protobuf envelope carries no object (runtime.Unknown.raw is empty)',
        unsupported: false,
      };
    // The envelope names the body's type (a scale subresource takes a Scale); without a name, the URL's kind.
    const bodyKind = env.kind || kind;
    const versions = OBJECT_SCHEMAS.get(bodyKind) ?? [];
    if (versions.length === 0)
      return { error: `protobuf bodies are not accepted for ${bodyKind}; send JSON`, unsupported: true };
    // Without a version in the envelope, the first (preferred) one.
    const schema = env.apiVersion ? versions.find((v) => v.apiVersion === env.apiVersion) : versions[0];
    if (!schema)
      return {
        error: `protobuf bodies are accepted for ${versions.map((v) => v.apiVersion).join(', ')} ${bodyKind}, not ${env.apiVersion}; send JSON`,
        unsupported: true,
      };
    const obj = decodeMessage(env.raw, schema.message, bodyKind);
    return { value: { apiVersion: schema.apiVersion, kind: bodyKind, ...obj } };
  } catch (e) {
    if (!(e instanceof ProtobufError)) throw e;
    return { error: `malformed protobuf body: ${e.message}`, unsupported: false };
  }
}
