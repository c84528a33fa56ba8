// A minimal OpenAPI v3 surface. kubectl create/apply validate by default: they read /openapi/v3 to learn whether
// the server validates fields itself (a `fieldValidation` query parameter on each kind's PATCH operation) and, if
// so, send fieldValidation=Strict instead of validating client-side. Without these documents kubectl refuses
// (“failed to download openapi”). No schemas are served: kubectl apply then builds strategic merge patches from
// its compiled-in types, which know the same merge keys as this server.
import { groupVersions, RESOURCES } from './resources.js';

const gvPath = (group: string, version: string): string =>
  group ? `apis/${group}/${version}` : `api/${version}`;

export function openapiRoot(): object {
  const paths: Record<string, { serverRelativeURL: string }> = {};
  for (const { group, version } of groupVersions()) {
    const p = gvPath(group, version);
    paths[p] = { serverRelativeURL: `/openapi/v3/${p}?hash=kpts` };
  }
  return { paths };
}

export function openapiGroupVersion(path: string): object | undefined {
  const gv = groupVersions().find(({ group, version }) => gvPath(group, version) === path);
  if (!gv) return undefined;
  const paths: Record<string, object> = {};
  for (const r of RESOURCES.filter((x) => x.group === gv.group && x.version === gv.version)) {
    const base = `/${path}${r.namespaced ? '/namespaces/{namespace}' : ''}/${r.resource}/{name}`;
    paths[base] = {
      patch: {
        operationId: `patch${r.names.kind}`,
        'x-kubernetes-action': 'patch',
        'x-kubernetes-group-version-kind': { group: r.group, version: r.version, kind: r.names.kind },
        parameters: [
          { name: 'fieldValidation', in: 'query', schema: { type: 'string', uniqueItems: true } },
          { name: 'fieldManager', in: 'query', schema: { type: 'string', uniqueItems: true } },
          { name: 'dryRun', in: 'query', schema: { type: 'string', uniqueItems: true } },
        ],
        responses: { '200': { description: 'OK' } },
      },
    };
  }
  return {
    openapi: '3.0.0',
    info: { title: 'Kubernetes', version: 'v1.32.0-kpts' },
    paths,
    components: { schemas: {} },
  };
}

/**
 * /openapi/v2 for older kubectl (Debian's kubernetes-client is 1.20): it reads this protobuf document before
 * validating client-side and stops with NotFound without it. A document with no definitions is enough: kubectl
 * skips client-side validation of kinds the document does not describe. The bytes are the protobuf encoding of
 * openapi_v2.Document{swagger: "2.0", info: {title: "Kubernetes", version: "v1.32.0-kpts"}}.
 */
export function openapiV2Protobuf(): Buffer {
  const field = (tag: number, payload: Buffer): Buffer =>
    Buffer.concat([Buffer.from([(tag << 3) | 2, payload.length]), payload]);
  const info = Buffer.concat([field(1, Buffer.from('Kubernetes')), field(2, Buffer.from('v1.32.0-kpts'))]);
  return Buffer.concat([field(1, Buffer.from('2.0')), field(2, info)]);
}

// kubectl asks for application/com.github.proto-openapi.spec.v2@v1.0+protobuf, but Go's mime parser rejects that
// name in a response's Content-Type (the "@"), so the bytes go back as a plain octet stream.
export const OPENAPI_V2_PROTOBUF_TYPE = 'application/octet-stream';
