// Reads Kubernetes objects from manifest text, as `kubectl apply -f` accepts it: multi-document YAML, JSON, or a
// List of items. Used by `kube-proxy-ts render` and by tests; objects are sorted by kind, and anything that is not
// an object with a kind is reported rather than thrown.
import { parseAllDocuments } from 'yaml';
import type { EndpointSlice, Node, Service } from '../api/objects.js';

export interface ManifestObjects {
  readonly services: Service[];
  readonly endpointSlices: EndpointSlice[];
  readonly nodes: Node[];
  /** Objects of other kinds, ignored. */
  readonly ignored: string[];
  /** Documents that could not be read, with where and why. */
  readonly problems: string[];
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function describe(obj: Record<string, unknown>): string {
  const meta = isRecord(obj.metadata) ? obj.metadata : {};
  const ns = typeof meta.namespace === 'string' ? `${meta.namespace}/` : '';
  const name = typeof meta.name === 'string' ? meta.name : '(no name)';
  return `${String(obj.kind)} ${ns}${name}`;
}

/** Parses manifest text; `source` names it in problems ("file.yaml", "stdin"). */
export function readManifests(text: string, source: string): ManifestObjects {
  const out: ManifestObjects = { services: [], endpointSlices: [], nodes: [], ignored: [], problems: [] };
  const docs = parseAllDocuments(text);
  const list = Array.isArray(docs) ? docs : [docs];
  list.forEach((doc, i) => {
    const where = list.length > 1 ? `${source} document ${i + 1}` : source;
    if (doc.errors.length > 0) {
      out.problems.push(`${where}: ${doc.errors[0]?.message ?? 'invalid YAML'}`);
      return;
    }
    collect(doc.toJS({ maxAliasCount: 100 }) as unknown, where, out);
  });
  return out;
}

function collect(value: unknown, where: string, out: ManifestObjects): void {
  if (value === null || value === undefined) return; // an empty document
  if (!isRecord(value)) {
    out.problems.push(`${where}: not an object`);
    return;
  }
  const kind = value.kind;
  if (typeof kind === 'string' && kind.endsWith('List') && Array.isArray(value.items)) {
    value.items.forEach((item, j) => collect(item, `${where} item ${j + 1}`, out));
    return;
  }
  if (typeof kind !== 'string') {
    out.problems.push(`${where}: object has no kind`);
    return;
  }
  if (!isRecord(value.metadata)) {
    out.problems.push(`${where}: ${kind} has no metadata`);
    return;
  }
  switch (kind) {
    case 'Service':
      out.services.push(value as unknown as Service);
      break;
    case 'EndpointSlice':
      out.endpointSlices.push(value as unknown as EndpointSlice);
      break;
    case 'Node':
      out.nodes.push(value as unknown as Node);
      break;
    default:
      out.ignored.push(describe(value));
  }
}
