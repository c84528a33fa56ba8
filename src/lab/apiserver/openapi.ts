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
        operationId: `patch${r.kind}`,
        'x-kubernetes-action': 'patch',
        'x-kubernetes-group-version-kind': { group: r.group, version: r.version, kind: r.kind },
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
