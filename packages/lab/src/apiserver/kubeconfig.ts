// The kubeconfig the lab API server hands to clients: one cluster, one token user, one context.
import { stringify } from 'yaml';

export function kubeconfigYaml(server: string, token: string, caPem?: string, name = 'kpts-lab'): string {
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name,
        cluster: {
          server,
          ...(caPem ? { 'certificate-authority-data': Buffer.from(caPem).toString('base64') } : {}),
        },
      },
    ],
    users: [{ name: `${name}-admin`, user: { token } }],
    contexts: [{ name, context: { cluster: name, user: `${name}-admin`, namespace: 'default' } }],
    'current-context': name,
    preferences: {},
  });
}
