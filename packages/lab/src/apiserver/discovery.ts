// Discovery documents: /version, /api, /apis, /apis/<group>, and the APIResourceList of each group version.
// kubectl asks for the aggregated form (apidiscovery.k8s.io/v2) first and falls back to these when the answer
// is plain application/json, so only the plain form is served.
import { groupVersions, RESOURCES, RESOURCE_VERBS } from './resources.js';

export const SERVER_VERSION = {
  major: '1',
  minor: '32',
  gitVersion: 'v1.32.0-kpts',
  gitCommit: '0000000000000000000000000000000000000000',
  gitTreeState: 'clean',
  buildDate: '2025-01-01T00:00:00Z',
  goVersion: 'node',
  compiler: 'tsc',
  platform: 'linux/amd64',
} as const;

export function apiVersions(serverAddress: string): object {
  return {
    kind: 'APIVersions',
    versions: ['v1'],
    serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }],
  };
}

function group(name: string): object {
  const versions = groupVersions()
    .filter((gv) => gv.group === name)
    .map((gv) => ({ groupVersion: `${gv.group}/${gv.version}`, version: gv.version }));
  return { name, versions, preferredVersion: versions[0] };
}

export function apiGroupList(): object {
  const names = [...new Set(groupVersions().map((gv) => gv.group))].filter((g) => g !== '');
  return { kind: 'APIGroupList', apiVersion: 'v1', groups: names.map(group) };
}

export function apiGroup(name: string): object | undefined {
  if (!groupVersions().some((gv) => gv.group === name && name !== '')) return undefined;
  return { kind: 'APIGroup', apiVersion: 'v1', ...group(name) };
}

export function apiResourceList(groupName: string, version: string): object | undefined {
  const rs = RESOURCES.filter((r) => r.group === groupName && r.version === version);
  if (rs.length === 0) return undefined;
  const resources: object[] = [];
  for (const r of rs) {
    resources.push({
      name: r.resource,
      singularName: r.names.singular,
      namespaced: r.namespaced,
      kind: r.names.kind,
      verbs: RESOURCE_VERBS,
      ...(r.names.shortNames.length > 0 ? { shortNames: r.names.shortNames } : {}),
      ...(r.names.categories.length > 0 ? { categories: r.names.categories } : {}),
    });
    for (const sub of r.subresources)
      resources.push({
        name: `${r.resource}/${sub}`,
        singularName: '',
        namespaced: r.namespaced,
        ...(sub === 'scale'
          ? { group: 'autoscaling', version: 'v1', kind: 'Scale' }
          : { kind: r.names.kind }),
        verbs: ['get', 'patch', 'update'],
      });
  }
  return {
    kind: 'APIResourceList',
    apiVersion: 'v1',
    groupVersion: groupName ? `${groupName}/${version}` : version,
    resources,
  };
}
