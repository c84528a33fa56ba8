// What the soak's two load generators send to, worked out from the Services as the API server allocated them:
//   - from the soak-client pod, ClusterIPs: eight churning Services (graceful and readiness alike) and the anchor,
//     each over TCP and UDP, plus the control (the anchor pods' own addresses, no Service rule in the path) and
//     four long-lived connections to the anchor;
//   - from the client host, NodePorts through every node, and two long-lived connections per node to the anchor.
import type { Service } from 'kube-proxy-ts/api/objects.js';
import type { LabNodeLayout } from '../cluster/layout.js';
import { WEB_POD_PORT } from '../cluster/workload.js';
import type { PodState } from './churn.js';
import { CONTROL_SERVICE, type LoadTarget, type LongTarget } from './load-generator.js';
import { ANCHOR, type SoakServicePlan } from './workload.js';

/** A Service's frontends: its ClusterIP, and its TCP and UDP NodePorts when it has them. */
export interface Frontend {
  readonly clusterIP: string;
  readonly tcpNodePort?: number;
  readonly udpNodePort?: number;
}

/** Each Service's frontends, by name. */
export function frontendsOf(services: readonly Service[]): Map<string, Frontend> {
  const frontends = new Map<string, Frontend>();
  for (const s of services) {
    const ports = s.spec?.ports ?? [];
    const tcp = ports.find((p) => p.protocol === 'TCP')?.nodePort;
    const udp = ports.find((p) => p.protocol === 'UDP')?.nodePort;
    frontends.set(s.metadata?.name ?? '', {
      clusterIP: s.spec?.clusterIP ?? '',
      ...(tcp !== undefined ? { tcpNodePort: tcp } : {}),
      ...(udp !== undefined ? { udpNodePort: udp } : {}),
    });
  }
  return frontends;
}

export interface SoakTargets {
  /** The soak-client pod's: ClusterIPs and the control. */
  readonly pod: { readonly targets: LoadTarget[]; readonly long: LongTarget[] };
  /** The client host's: NodePorts through every node. */
  readonly client: { readonly targets: LoadTarget[]; readonly long: LongTarget[] };
}

/** Both generators' targets; `pods` are the soak's pods as watched (the anchor pods give the control). */
export function soakTargets(
  plans: readonly SoakServicePlan[],
  frontends: ReadonlyMap<string, Frontend>,
  clientPod: PodState,
  pods: Iterable<PodState>,
  nodes: readonly Pick<LabNodeLayout, 'name' | 'ip'>[],
): SoakTargets {
  const anchor = frontends.get(ANCHOR);
  const podLong: LongTarget[] = [
    { service: ANCHOR, via: 'clusterIP', host: anchor?.clusterIP ?? '', port: 80, connections: 4 },
  ];
  const clientLong: LongTarget[] =
    anchor?.tcpNodePort === undefined
      ? []
      : nodes.map((n) => ({
          service: ANCHOR,
          via: 'nodePort' as const,
          host: n.ip,
          port: anchor.tcpNodePort ?? 0,
          connections: 2,
        }));
  return {
    pod: {
      targets: [...clusterIPTargets(plans, frontends, clientPod), ...controlTargets(pods)],
      long: podLong,
    },
    client: { targets: nodePortTargets(plans, frontends, nodes), long: clientLong },
  };
}

function clusterIPTargets(
  plans: readonly SoakServicePlan[],
  frontends: ReadonlyMap<string, Frontend>,
  clientPod: PodState,
): LoadTarget[] {
  const chosen = [
    ...plans.filter((p) => p.name !== ANCHOR).slice(0, 8),
    ...plans.filter((p) => p.name === ANCHOR),
  ];
  return chosen.flatMap((plan) =>
    (['tcp', 'udp'] as const).map((protocol) => ({
      service: plan.name,
      protocol,
      via: 'clusterIP' as const,
      host: frontends.get(plan.name)?.clusterIP ?? '',
      port: 80,
      ...(clientPod.node !== undefined ? { node: clientPod.node } : {}),
    })),
  );
}

/** The control: the anchor pods' own addresses, the same pod servers without any Service rule in the path. */
function controlTargets(pods: Iterable<PodState>): LoadTarget[] {
  return [...pods]
    .filter((p) => p.app === ANCHOR && p.ip !== undefined)
    .flatMap((p) =>
      (['tcp', 'udp'] as const).map((protocol) => ({
        service: CONTROL_SERVICE,
        protocol,
        via: 'podIP' as const,
        host: p.ip ?? '',
        port: WEB_POD_PORT,
      })),
    );
}

function nodePortTargets(
  plans: readonly SoakServicePlan[],
  frontends: ReadonlyMap<string, Frontend>,
  nodes: readonly Pick<LabNodeLayout, 'name' | 'ip'>[],
): LoadTarget[] {
  const out: LoadTarget[] = [];
  for (const plan of plans.filter((p) => p.nodePort && p.name !== ANCHOR))
    for (const n of nodes) {
      const f = frontends.get(plan.name);
      const at = { service: plan.name, via: 'nodePort' as const, host: n.ip, node: n.name };
      if (f?.tcpNodePort !== undefined) out.push({ ...at, protocol: 'tcp', port: f.tcpNodePort });
      if (f?.udpNodePort !== undefined) out.push({ ...at, protocol: 'udp', port: f.udpNodePort });
    }
  return out;
}
