// Field validation shared by the kinds: names, labels, annotations, ports, IPs. Every check returns causes (field
// path + message) rather than throwing, so one request can report all its problems at once, as upstream does.
import { cause, type StatusCause } from './status.js';
import { isObject, type JsonObject } from './json.js';
import { ipToBigInt } from './ipnet.js';
import type { NameRule } from './resources.js';

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const QUALIFIED_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
const IANA_SVC_NAME = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/;

export function nameErrors(rule: NameRule, name: string): string[] {
  switch (rule) {
    case 'dns1123-label':
      if (name.length > 63) return ['must be no more than 63 characters'];
      return DNS1123_LABEL.test(name)
        ? []
        : [
            `a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
          ];
    case 'dns1035-label':
      if (name.length > 63) return ['must be no more than 63 characters'];
      return DNS1035_LABEL.test(name)
        ? []
        : [
            `a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')`,
          ];
    case 'dns1123-subdomain':
      if (name.length > 253) return ['must be no more than 253 characters'];
      return DNS1123_SUBDOMAIN.test(name)
        ? []
        : [
            `a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
          ];
    case 'path-segment':
      // upstream ValidatePathSegmentName
      if (name === '.' || name === '..') return [`may not be '${name}'`];
      return /[/%]/.test(name) ? [`may not contain '/' or '%'`] : [];
  }
}

export function isDns1123Label(s: string): boolean {
  return s.length <= 63 && DNS1123_LABEL.test(s);
}

/** A label or annotation key: optional DNS subdomain prefix + '/' + a qualified name of at most 63 characters. */
export function qualifiedNameErrors(key: string): string[] {
  const slash = key.lastIndexOf('/');
  const prefix = slash >= 0 ? key.slice(0, slash) : undefined;
  const name = slash >= 0 ? key.slice(slash + 1) : key;
  const errs: string[] = [];
  if (prefix !== undefined && (prefix.length === 0 || prefix.length > 253 || !DNS1123_SUBDOMAIN.test(prefix)))
    errs.push('prefix part must be a lowercase RFC 1123 subdomain');
  if (name.length === 0 || name.length > 63 || !QUALIFIED_NAME.test(name))
    errs.push(
      "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character, at most 63 characters",
    );
  return errs;
}

export function metadataCauses(meta: JsonObject): StatusCause[] {
  const out: StatusCause[] = [];
  const labels = meta.labels;
  if (isObject(labels)) {
    for (const [k, v] of Object.entries(labels)) {
      for (const e of qualifiedNameErrors(k))
        out.push(cause('metadata.labels', `Invalid value: "${k}": ${e}`));
      if (typeof v !== 'string' || v.length > 63 || !LABEL_VALUE.test(v))
        out.push(
          cause(
            'metadata.labels',
            `Invalid value: "${String(v)}": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character`,
          ),
        );
    }
  }
  const annotations = meta.annotations;
  if (isObject(annotations)) {
    let size = 0;
    for (const [k, v] of Object.entries(annotations)) {
      for (const e of qualifiedNameErrors(k.toLowerCase()))
        out.push(cause('metadata.annotations', `Invalid value: "${k}": ${e}`));
      size += k.length + (typeof v === 'string' ? v.length : 0);
    }
    if (size > 256 * 1024)
      out.push(
        cause('metadata.annotations', 'Too long: must have at most 262144 bytes', 'FieldValueInvalid'),
      );
  }
  return out;
}

export function isValidIP(ip: string): boolean {
  return ipToBigInt(ip) !== undefined;
}

export function portCauses(field: string, value: unknown, allowZero = false): StatusCause[] {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < (allowZero ? 0 : 1) || value > 65535)
    return [
      cause(
        field,
        `Invalid value: ${JSON.stringify(value ?? null)}: must be between ${allowZero ? 0 : 1} and 65535, inclusive`,
      ),
    ];
  return [];
}

/** A named port (container port name, targetPort string): an IANA service name. */
export function portNameErrors(name: string): string[] {
  if (name.length > 15) return ['must be no more than 15 characters'];
  if (!IANA_SVC_NAME.test(name))
    return ['must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)'];
  if (name.includes('--')) return ['must not contain consecutive hyphens'];
  if (!/[a-z]/.test(name)) return ['must contain at least one letter (a-z)'];
  return [];
}

export const PROTOCOLS = ['TCP', 'UDP', 'SCTP'] as const;

export function protocolCauses(field: string, value: unknown): StatusCause[] {
  return typeof value === 'string' && (PROTOCOLS as readonly string[]).includes(value)
    ? []
    : [
        cause(
          field,
          `Unsupported value: ${JSON.stringify(value)}: supported values: "SCTP", "TCP", "UDP"`,
          'FieldValueNotSupported',
        ),
      ];
}
