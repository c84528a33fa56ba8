// featureGates / --feature-gates → the model's FeatureGates value. Upstream checks names against the registry of
// every Kubernetes feature gate and refuses unknown ones; we cannot carry that registry, and a cluster-wide gate
// list (kubeadm copies one into the kube-proxy ConfigMap) must not stop the proxy. So: a name that is not even a
// gate name, or a value that is not a boolean, is an error; a well-formed name we do not act on is a warning.
import { DEFAULT_FEATURE_GATES } from '../model/feature-gates.js';
import type { FeatureGates } from '../model/feature-gates.js';
import { problem } from './problems.js';
import type { ConfigProblem } from './problems.js';

type Stage = 'alpha' | 'beta' | 'ga';

interface ModelGate {
  readonly stage: Stage;
  readonly field: keyof FeatureGates;
}

/** Gates the model acts on, by upstream name. */
export const MODEL_FEATURE_GATES = {
  PreferSameTrafficDistribution: { stage: 'beta', field: 'preferSameTrafficDistribution' },
} as const satisfies Readonly<Record<string, ModelGate>>;

/** Upstream gates that concern kube-proxy but need no switch here (GA, or behaviour we always have). */
const ACCEPTED_GATES: ReadonlySet<string> = new Set([
  'AllAlpha',
  'AllBeta',
  'NFTablesProxyMode',
  'MultiCIDRServiceAllocator',
  'ServiceTrafficDistribution',
  'TopologyAwareHints',
  'KubeProxyDrainingTerminatingNodes',
  'LoadBalancerIPMode',
  // Read by validation: ipvs mode needs it on (its default).
  'KubeProxyIPVS',
]);

/** Upstream's gate for ipvs mode (KEP-5495): on by default since 1.37, to be turned off in 1.40. */
export const IPVS_FEATURE_GATE = 'KubeProxyIPVS';

const GATE_NAME = /^[A-Z][A-Za-z0-9]*$/;

export interface ResolvedFeatureGates {
  readonly gates: FeatureGates;
  readonly problems: readonly ConfigProblem[];
  readonly warnings: readonly string[];
}

function isModelGate(name: string): name is keyof typeof MODEL_FEATURE_GATES {
  return Object.hasOwn(MODEL_FEATURE_GATES, name);
}

export function resolveFeatureGates(
  requested: Readonly<Record<string, boolean>>,
  field = 'featureGates',
): ResolvedFeatureGates {
  const problems: ConfigProblem[] = [];
  const warnings: string[] = [];
  for (const [name, value] of Object.entries(requested)) {
    if (!GATE_NAME.test(name)) {
      problems.push(problem(field, `${JSON.stringify(name)} is not a feature gate name`));
    } else if (typeof value !== 'boolean') {
      problems.push(problem(`${field}.${name}`, 'must be true or false'));
    } else if (!isModelGate(name) && !ACCEPTED_GATES.has(name)) {
      warnings.push(`feature gate ${name}=${value} is not used by kube-proxy-ts and is ignored (${field})`);
    }
  }
  const gates: Record<keyof FeatureGates, boolean> = { ...DEFAULT_FEATURE_GATES };
  for (const [name, gate] of Object.entries<ModelGate>(MODEL_FEATURE_GATES)) {
    const explicit = requested[name];
    const all =
      gate.stage === 'alpha'
        ? requested['AllAlpha']
        : gate.stage === 'beta'
          ? requested['AllBeta']
          : undefined;
    gates[gate.field] = explicit ?? all ?? DEFAULT_FEATURE_GATES[gate.field];
  }
  return { gates, problems, warnings };
}
