// Defaults and validation for Namespace, Node, Pod, ConfigMap, EndpointSlice, Deployment, ReplicaSet and DaemonSet
// (Service has its own file, for its allocators; HorizontalPodAutoscaler autoscaling.ts, for its two versions). Only what matters to the lab and to clients that check it is covered.
import { arr, child, isObject, jsonEqual, num, str, type JsonObject } from './json.js';
import { cause, type StatusCause } from './status.js';
import type { Strategy } from './strategy.js';
import { isDns1123Label, isValidIP, portCauses, portNameErrors, protocolCauses } from './validation.js';
import { parseCidr } from './ipnet.js';

const setDefault = (obj: JsonObject, key: string, value: unknown): void => {
  if (obj[key] === undefined || obj[key] === null) obj[key] = value;
};

const ensureObject = (obj: JsonObject, key: string): JsonObject => {
  const v = obj[key];
  if (isObject(v)) return v;
  const fresh: JsonObject = {};
  obj[key] = fresh;
  return fresh;
};

export const namespaceStrategy: Strategy = {
  prepareForCreate(obj) {
    const meta = ensureObject(obj, 'metadata');
    const labels = ensureObject(meta, 'labels');
    // The API server stamps every namespace with its own name, so label selectors can pick namespaces.
    labels['kubernetes.io/metadata.name'] = String(meta.name ?? '');
    obj.status = { phase: 'Active' };
  },
  prepareForUpdate(obj) {
    const meta = ensureObject(obj, 'metadata');
    ensureObject(meta, 'labels')['kubernetes.io/metadata.name'] = String(meta.name ?? '');
  },
  validate: () => [],
};

export const nodeStrategy: Strategy = {
  validate(obj) {
    const out: StatusCause[] = [];
    const spec = child(obj, 'spec');
    const cidrs = [
      ...(typeof spec.podCIDR === 'string' && spec.podCIDR ? [spec.podCIDR] : []),
      ...arr(spec, 'podCIDRs'),
    ];
    for (const c of cidrs)
      if (typeof c !== 'string' || !parseCidr(c))
        out.push(cause('spec.podCIDRs', `Invalid value: ${JSON.stringify(c)}: must be a valid CIDR`));
    return out;
  },
};

function podSpecDefaults(spec: JsonObject): void {
  setDefault(spec, 'restartPolicy', 'Always');
  setDefault(spec, 'terminationGracePeriodSeconds', 30);
  setDefault(spec, 'dnsPolicy', 'ClusterFirst');
  setDefault(spec, 'schedulerName', 'default-scheduler');
  for (const c of arr(spec, 'containers')) {
    if (!isObject(c)) continue;
    setDefault(c, 'imagePullPolicy', 'IfNotPresent');
    setDefault(c, 'terminationMessagePath', '/dev/termination-log');
    setDefault(c, 'terminationMessagePolicy', 'File');
    for (const p of arr(c, 'ports')) if (isObject(p)) setDefault(p, 'protocol', 'TCP');
  }
}

function podSpecCauses(spec: unknown, path: string): StatusCause[] {
  const out: StatusCause[] = [];
  const containers = arr(spec, 'containers');
  if (containers.length === 0) out.push(cause(`${path}.containers`, 'Required value', 'FieldValueRequired'));
  const names = new Set<string>();
  containers.forEach((c, i) => {
    const p = `${path}.containers[${i}]`;
    const name = str(c, 'name');
    if (!name) out.push(cause(`${p}.name`, 'Required value', 'FieldValueRequired'));
    else if (!isDns1123Label(name))
      out.push(cause(`${p}.name`, `Invalid value: "${name}": must be a DNS-1123 label`));
    else if (names.has(name))
      out.push(cause(`${p}.name`, `Duplicate value: "${name}"`, 'FieldValueDuplicate'));
    if (name) names.add(name);
    if (!str(c, 'image')) out.push(cause(`${p}.image`, 'Required value', 'FieldValueRequired'));
    arr(c, 'ports').forEach((port, j) => {
      const pp = `${p}.ports[${j}]`;
      out.push(...portCauses(`${pp}.containerPort`, num(port, 'containerPort')));
      const pn = str(port, 'name');
      if (pn !== undefined)
        for (const e of portNameErrors(pn)) out.push(cause(`${pp}.name`, `Invalid value: "${pn}": ${e}`));
      if (isObject(port) && port.protocol !== undefined)
        out.push(...protocolCauses(`${pp}.protocol`, port.protocol));
    });
  });
  return out;
}

export const podStrategy: Strategy = {
  prepareForCreate(obj) {
    podSpecDefaults(ensureObject(obj, 'spec'));
    const status = ensureObject(obj, 'status');
    setDefault(status, 'phase', 'Pending');
  },
  prepareForUpdate(obj) {
    podSpecDefaults(ensureObject(obj, 'spec'));
  },
  validate(obj, old) {
    const out = podSpecCauses(obj.spec, 'spec');
    const oldNode = str(child(old, 'spec'), 'nodeName');
    const newNode = str(child(obj, 'spec'), 'nodeName');
    if (oldNode && oldNode !== newNode)
      out.push(
        cause(
          'spec.nodeName',
          'Forbidden: pod updates may not change spec.nodeName once set',
          'FieldValueForbidden',
        ),
      );
    return out;
  },
};

const CONFIG_KEY = /^[-._a-zA-Z0-9]+$/;

export const configMapStrategy: Strategy = {
  validate(obj) {
    const out: StatusCause[] = [];
    let size = 0;
    for (const field of ['data', 'binaryData']) {
      const v = obj[field];
      if (v === undefined || v === null) continue;
      if (!isObject(v)) {
        out.push(cause(field, 'Invalid value: must be a map of strings'));
        continue;
      }
      for (const [k, val] of Object.entries(v)) {
        if (!CONFIG_KEY.test(k) || k.length > 253)
          out.push(
            cause(
              `${field}[${k}]`,
              `Invalid value: "${k}": a valid config key must consist of alphanumeric characters, '-', '_' or '.'`,
            ),
          );
        if (typeof val !== 'string') out.push(cause(`${field}[${k}]`, 'Invalid value: must be a string'));
        else size += val.length;
      }
    }
    if (size > 1024 * 1024) out.push(cause('data', 'Too long: must have at most 1048576 bytes'));
    return out;
  },
};

export const endpointSliceStrategy: Strategy = {
  prepareForCreate(obj) {
    for (const p of arr(obj, 'ports')) if (isObject(p)) setDefault(p, 'protocol', 'TCP');
  },
  prepareForUpdate(obj) {
    for (const p of arr(obj, 'ports')) if (isObject(p)) setDefault(p, 'protocol', 'TCP');
  },
  validate(obj, old) {
    const out: StatusCause[] = [];
    const type = obj.addressType;
    if (type !== 'IPv4' && type !== 'IPv6' && type !== 'FQDN')
      out.push(
        cause(
          'addressType',
          `Unsupported value: ${JSON.stringify(type ?? null)}: supported values: "FQDN", "IPv4", "IPv6"`,
          'FieldValueNotSupported',
        ),
      );
    if (old && old.addressType !== type) out.push(cause('addressType', 'Invalid value: field is immutable'));
    const endpoints = arr(obj, 'endpoints');
    if (endpoints.length > 1000) out.push(cause('endpoints', 'Too many: must have at most 1000 items'));
    endpoints.forEach((e, i) => {
      const addrs = arr(e, 'addresses');
      if (addrs.length !== 1)
        out.push(cause(`endpoints[${i}].addresses`, 'Invalid value: must contain exactly one address'));
      addrs.forEach((a, j) => {
        const ok =
          typeof a === 'string' &&
          (type === 'FQDN' ? a.length > 0 : isValidIP(a) && (type === 'IPv4') === !a.includes(':'));
        if (!ok)
          out.push(
            cause(
              `endpoints[${i}].addresses[${j}]`,
              `Invalid value: ${JSON.stringify(a)}: must be a valid ${String(type)} address`,
            ),
          );
      });
    });
    const ports = arr(obj, 'ports');
    if (ports.length > 100) out.push(cause('ports', 'Too many: must have at most 100 items'));
    ports.forEach((p, i) => {
      if (isObject(p) && p.port !== undefined && p.port !== null)
        out.push(...portCauses(`ports[${i}].port`, p.port, true));
      if (isObject(p) && p.protocol !== undefined && p.protocol !== null)
        out.push(...protocolCauses(`ports[${i}].protocol`, p.protocol));
    });
    return out;
  },
};

function labelsMatchSelector(selector: JsonObject, labels: JsonObject): boolean {
  for (const [k, v] of Object.entries(child(selector, 'matchLabels'))) if (labels[k] !== v) return false;
  for (const e of arr(selector, 'matchExpressions')) {
    const key = str(e, 'key') ?? '';
    const values = arr(e, 'values');
    const has = Object.prototype.hasOwnProperty.call(labels, key);
    switch (str(e, 'operator')) {
      case 'In':
        if (!has || !values.includes(labels[key])) return false;
        break;
      case 'NotIn':
        if (has && values.includes(labels[key])) return false;
        break;
      case 'Exists':
        if (!has) return false;
        break;
      case 'DoesNotExist':
        if (has) return false;
        break;
      default:
        return false;
    }
  }
  return true;
}

/** The defaults of a ReplicaSet's spec, which a Deployment's spec shares, on create and on update alike. */
function replicatedSpecDefaults(spec: JsonObject): void {
  setDefault(spec, 'replicas', 1);
  podSpecDefaults(ensureObject(ensureObject(spec, 'template'), 'spec'));
}

/** A ReplicaSet's selector needs requirements, as a Deployment's does (upstream's ValidateReplicaSetSpec). */
const selectorHasRequirements = (selector: JsonObject): boolean =>
  Object.keys(child(selector, 'matchLabels')).length > 0 || arr(selector, 'matchExpressions').length > 0;

/** What a ReplicaSet's spec must be, and a Deployment's less its strategy: replicas, selector, Pod template. */
function replicatedSpecCauses(spec: JsonObject, old: JsonObject | undefined): StatusCause[] {
  const out: StatusCause[] = [];
  const replicas = spec.replicas;
  if (typeof replicas !== 'number' || !Number.isInteger(replicas) || replicas < 0)
    out.push(
      cause(
        'spec.replicas',
        `Invalid value: ${JSON.stringify(replicas)}: must be greater than or equal to 0`,
      ),
    );
  out.push(...workloadSelectorCauses(spec, old, selectorHasRequirements));
  out.push(...podSpecCauses(child(child(spec, 'template'), 'spec'), 'spec.template.spec'));
  return out;
}

export const deploymentStrategy: Strategy = {
  prepareForCreate(obj) {
    const spec = ensureObject(obj, 'spec');
    replicatedSpecDefaults(spec);
    setDefault(spec, 'revisionHistoryLimit', 10);
    setDefault(spec, 'progressDeadlineSeconds', 600);
    setDefault(spec, 'strategy', {
      type: 'RollingUpdate',
      rollingUpdate: { maxSurge: '25%', maxUnavailable: '25%' },
    });
    delete obj.status;
  },
  prepareForUpdate(obj) {
    replicatedSpecDefaults(ensureObject(obj, 'spec'));
  },
  validate(obj, old) {
    return replicatedSpecCauses(child(obj, 'spec'), old);
  },
};

export { labelsMatchSelector };

// ReplicaSet: what the Deployment controller writes (one per template revision), or a user's own. Upstream's
// defaults (replicas 1) and the validation the Deployment's spec gets, less its strategy.
export const replicaSetStrategy: Strategy = {
  prepareForCreate(obj) {
    replicatedSpecDefaults(ensureObject(obj, 'spec'));
    delete obj.status;
  },
  prepareForUpdate(obj) {
    replicatedSpecDefaults(ensureObject(obj, 'spec'));
  },
  validate(obj, old) {
    return replicatedSpecCauses(child(obj, 'spec'), old);
  },
};

/**
 * A workload's selector (Deployment, DaemonSet): present with requirements, matching its Pod template's labels,
 * and immutable once created, as upstream's apps/v1 validation has it.
 */
function workloadSelectorCauses(
  spec: JsonObject,
  old: JsonObject | undefined,
  hasRequirements: (selector: JsonObject) => boolean,
): StatusCause[] {
  const selector = spec.selector;
  if (!isObject(selector) || !hasRequirements(selector))
    return [cause('spec.selector', 'Required value', 'FieldValueRequired')];
  const out: StatusCause[] = [];
  const labels = child(child(child(spec, 'template'), 'metadata'), 'labels');
  if (!labelsMatchSelector(selector, labels))
    out.push(
      cause('spec.template.metadata.labels', 'Invalid value: `selector` does not match template `labels`'),
    );
  if (old && !jsonEqual(child(old, 'spec').selector, selector))
    out.push(cause('spec.selector', 'Invalid value: field is immutable'));
  return out;
}

/** The update strategy a DaemonSet gets when it names none, on create and on update alike. */
function daemonSetSpecDefaults(spec: JsonObject): void {
  setDefault(spec, 'updateStrategy', { type: 'RollingUpdate' });
  const strategy = ensureObject(spec, 'updateStrategy');
  if (strategy.type === 'RollingUpdate') {
    const rolling = ensureObject(strategy, 'rollingUpdate');
    setDefault(rolling, 'maxUnavailable', 1);
    setDefault(rolling, 'maxSurge', 0);
  }
  podSpecDefaults(ensureObject(ensureObject(spec, 'template'), 'spec'));
}

// DaemonSet: upstream's defaults (RollingUpdate, maxUnavailable 1, maxSurge 0) — kubectl rollout status refuses a
// DaemonSet without a RollingUpdate strategy, and the controller reads maxUnavailable from here.
export const daemonSetStrategy: Strategy = {
  prepareForCreate(obj) {
    const spec = ensureObject(obj, 'spec');
    setDefault(spec, 'revisionHistoryLimit', 10);
    daemonSetSpecDefaults(spec);
    delete obj.status;
  },
  prepareForUpdate(obj) {
    daemonSetSpecDefaults(ensureObject(obj, 'spec'));
  },
  validate(obj, old) {
    const out: StatusCause[] = [];
    const spec = child(obj, 'spec');
    const hasRequirements = (selector: JsonObject): boolean =>
      Object.keys(child(selector, 'matchLabels')).length > 0;
    out.push(...workloadSelectorCauses(spec, old, hasRequirements));
    const type = str(child(spec, 'updateStrategy'), 'type');
    if (type !== 'RollingUpdate' && type !== 'OnDelete')
      out.push(
        cause(
          'spec.updateStrategy.type',
          `Unsupported value: ${JSON.stringify(type)}: supported values: "OnDelete", "RollingUpdate"`,
          'FieldValueNotSupported',
        ),
      );
    out.push(...podSpecCauses(child(child(spec, 'template'), 'spec'), 'spec.template.spec'));
    return out;
  },
};
