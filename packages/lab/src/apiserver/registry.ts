// The verbs over the store: create, update, patch, delete, deletecollection, get, list. This is where upstream's
// generic registry rules live (resourceVersion preconditions, immutable metadata, status vs. main resource,
// generation, graceful Pod deletion, finalizers, owner-reference garbage collection, namespace lifecycle). Each
// verb returns a Result: a bad request is a value, never an exception.
import { randomUUID } from 'node:crypto';
import type { Clock } from 'kube-proxy-ts/util/clock.js';
import { arr, child, cloneJson, isObject, jsonEqual, num, str, type JsonObject } from './json.js';
import { servedForm, storedForm } from './events.js';
import { applyPatch, type PatchType } from './patch.js';
import { apiVersionOf, resourceByKind, RESOURCES, type ResourceType } from './resources.js';
import { selectsObject, type ObjectSelectors } from './selectors.js';
import { errors, fail, ok, type ApiError, type Result, cause } from './status.js';
import type { ObjectStore } from './store.js';
import type { Strategy } from './strategy.js';
import { metadataCauses, nameErrors } from './validation.js';

export type Subresource = 'status' | 'scale' | undefined;

export interface ListOptions extends ObjectSelectors {
  readonly limit?: number;
  readonly continueToken?: string;
}

export interface ListResult {
  readonly items: JsonObject[];
  readonly resourceVersion: string;
  readonly continueToken?: string;
  readonly remainingItemCount?: number;
}

export interface DeleteOptions {
  readonly gracePeriodSeconds?: number;
  readonly propagationPolicy?: 'Orphan' | 'Background' | 'Foreground';
  readonly preconditions?: DeletePreconditions;
}

/** What the object to delete must still be (`DeleteOptions.preconditions`): a conflict otherwise. */
export interface DeletePreconditions {
  readonly uid?: string;
  readonly resourceVersion?: string;
}

/** RFC 3339 with seconds, as metav1.Time serializes. */
export const rfc3339 = (ms: number): string =>
  new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');

const metaOf = (obj: unknown): JsonObject => child(obj, 'metadata');
const nsOf = (obj: unknown): string => str(metaOf(obj), 'namespace') ?? '';
const nameOf = (obj: unknown): string => str(metaOf(obj), 'name') ?? '';

/**
 * A resourceVersion in a write (update, patch, scale) is a precondition: the 409 Conflict when it does not name
 * the current version. Absent or empty means "whatever is current".
 */
function staleVersion(t: ResourceType, name: string, current: JsonObject, rv: unknown): ApiError | undefined {
  if (rv === undefined || rv === '' || rv === str(metaOf(current), 'resourceVersion')) return undefined;
  return errors.conflict(
    t.group,
    t.resource,
    name,
    'the object has been modified; please apply your changes to the latest version and try again',
  );
}

export const SYSTEM_NAMESPACES = ['default', 'kube-system', 'kube-public', 'kube-node-lease'];

interface ContinueToken {
  readonly rv: number;
  readonly after: string;
}

/** Upstream's message for the first delete precondition the stored object does not meet; undefined when all hold. */
function unmetPrecondition(pre: DeletePreconditions, meta: JsonObject): string | undefined {
  const checks = [
    ['UID', pre.uid, meta.uid],
    ['ResourceVersion', pre.resourceVersion, meta.resourceVersion],
  ] as const;
  for (const [field, wanted, actual] of checks)
    if (wanted && wanted !== actual)
      return `Precondition failed: ${field} in precondition: ${wanted}, ${field} in object meta: ${String(actual)}`;
  return undefined;
}

function encodeContinue(t: ContinueToken): string {
  return Buffer.from(JSON.stringify(t)).toString('base64url');
}
function decodeContinue(s: string): ContinueToken | undefined {
  try {
    const v: unknown = JSON.parse(Buffer.from(s, 'base64url').toString('utf8'));
    if (isObject(v) && typeof v.rv === 'number' && typeof v.after === 'string')
      return { rv: v.rv, after: v.after };
  } catch {
    // fall through: a token we did not issue
  }
  return undefined;
}

/** A result as resource `t` serves it (see servedForm: events.k8s.io/v1 renames core/v1's Event fields). */
const served = (t: ResourceType, r: Result<JsonObject>): Result<JsonObject> =>
  r.ok ? ok(servedForm(t, r.value)) : r;

const randomSuffix = (n: number): string => {
  const alphabet = 'bcdfghjklmnpqrstvwxz2456789';
  let s = '';
  for (let i = 0; i < n; i++) s += alphabet[Math.floor(Math.random() * alphabet.length)];
  return s;
};

/** Copies the request's metadata.labels and metadata.annotations onto `next` (absent in the request: removed). */
function carryLabelsAndAnnotations(next: JsonObject, proposed: JsonObject): void {
  const meta = { ...metaOf(next) };
  const asked = metaOf(proposed);
  for (const f of ['labels', 'annotations'])
    if (asked[f] !== undefined) meta[f] = cloneJson(asked[f]);
    else delete meta[f];
  next.metadata = meta;
}

export class Registry {
  constructor(
    readonly store: ObjectStore,
    private readonly strategies: ReadonlyMap<string, Strategy>,
    private readonly clock: Clock,
  ) {}

  private strategy(t: ResourceType): Strategy | undefined {
    return this.strategies.get(t.names.kind);
  }

  private checkNamespace(t: ResourceType, namespace: string, creating: boolean): ApiError | undefined {
    if (!t.namespaced) return undefined;
    const nsType = resourceByKind('Namespace');
    const ns = this.store.get(nsType, '', namespace);
    if (!ns) return errors.notFound('', 'namespaces', namespace);
    if (creating && str(child(ns, 'status'), 'phase') === 'Terminating')
      return {
        code: 403,
        reason: 'BadRequest',
        message: `${t.resource} "${'new'}" is forbidden: unable to create new content in namespace ${namespace} because it is being terminated`,
      };
    return undefined;
  }

  /** Checks and normalizes the envelope of a request body: kind, apiVersion, namespace, metadata shape. */
  private envelope(t: ResourceType, namespace: string, body: unknown): Result<JsonObject> {
    if (!isObject(body)) return fail(errors.badRequest('the body of the request must be a JSON object'));
    if (body.apiVersion !== undefined && body.apiVersion !== apiVersionOf(t))
      return fail(
        errors.badRequest(
          `the API version in the data (${String(body.apiVersion)}) does not match the expected API version (${apiVersionOf(t)})`,
        ),
      );
    if (body.kind !== undefined && body.kind !== t.names.kind)
      return fail(
        errors.badRequest(
          `the kind in the data (${String(body.kind)}) does not match the expected kind (${t.names.kind})`,
        ),
      );
    if (body.metadata !== undefined && !isObject(body.metadata))
      return fail(errors.badRequest('metadata: must be an object'));
    const obj = cloneJson(body);
    const meta: JsonObject = isObject(obj.metadata) ? obj.metadata : {};
    for (const f of ['labels', 'annotations'])
      if (meta[f] !== undefined && meta[f] !== null) {
        const m = meta[f];
        if (!isObject(m) || Object.values(m).some((v) => typeof v !== 'string'))
          return fail(errors.badRequest(`metadata.${f}: must be a map of strings`));
      }
    if (t.namespaced) {
      if (meta.namespace !== undefined && meta.namespace !== '' && meta.namespace !== namespace)
        return fail(
          errors.badRequest(
            'the namespace of the provided object does not match the namespace sent on the request',
          ),
        );
      meta.namespace = namespace;
    } else delete meta.namespace;
    obj.metadata = meta;
    obj.apiVersion = apiVersionOf(t);
    obj.kind = t.names.kind;
    return ok(obj);
  }

  private invalid(t: ResourceType, name: string, causes: ReturnType<typeof metadataCauses>): ApiError {
    return errors.invalid(t.group, t.names.kind, name, causes);
  }

  get(t: ResourceType, namespace: string, name: string): Result<JsonObject> {
    const obj = this.store.get(t, t.namespaced ? namespace : '', name);
    return obj ? ok(servedForm(t, obj)) : fail(errors.notFound(t.group, t.resource, name));
  }

  list(t: ResourceType, namespace: string | undefined, opts: ListOptions = {}): Result<ListResult> {
    let after: string | undefined;
    let rv = this.store.resourceVersion;
    if (opts.continueToken) {
      const tok = decodeContinue(opts.continueToken);
      if (!tok) return fail(errors.badRequest('continue key is not valid: illegal base64 data or format'));
      if (tok.rv < this.store.compactedResourceVersion)
        return fail({
          code: 410,
          reason: 'Expired',
          message:
            'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.',
        });
      after = tok.after;
      // Every page of one list reports the first page's version, so a watch from it misses nothing.
      rv = tok.rv;
    }
    const entries = this.store.listKeyed(t, t.namespaced ? namespace : undefined);
    const items: JsonObject[] = [];
    let continueToken: string | undefined;
    let remaining = 0;
    const limit = opts.limit && opts.limit > 0 ? opts.limit : undefined;
    for (const [key, stored] of entries) {
      if (after !== undefined && key <= after) continue;
      // Selectors see the object as this API serves it (events.k8s.io/v1 selects on regarding.*).
      const obj = servedForm(t, stored);
      if (!selectsObject(opts, obj)) continue;
      if (limit !== undefined && items.length >= limit) {
        if (continueToken === undefined) {
          const lastKey = `${nsOf(items[items.length - 1])}/${nameOf(items[items.length - 1])}`;
          continueToken = encodeContinue({ rv, after: lastKey });
        }
        remaining++;
        continue;
      }
      items.push(obj);
    }
    return ok({
      items,
      resourceVersion: String(rv),
      ...(continueToken ? { continueToken, remainingItemCount: remaining } : {}),
    });
  }

  create(t: ResourceType, namespace: string, body: unknown): Result<JsonObject> {
    return served(t, this.createStored(t, namespace, body));
  }

  private createStored(t: ResourceType, namespace: string, body: unknown): Result<JsonObject> {
    const env = this.envelope(t, namespace, body);
    if (!env.ok) return env;
    const obj = storedForm(t, env.value);
    const meta = metaOf(obj);
    if (meta.resourceVersion !== undefined && meta.resourceVersion !== '')
      return fail(errors.badRequest('resourceVersion should not be set on objects to be created'));
    if (
      (meta.name === undefined || meta.name === '') &&
      typeof meta.generateName === 'string' &&
      meta.generateName
    )
      meta.name = `${meta.generateName}${randomSuffix(5)}`;
    const name = typeof meta.name === 'string' ? meta.name : '';
    if (!name)
      return fail(
        this.invalid(t, '', [
          cause('metadata.name', 'Required value: name or generateName is required', 'FieldValueRequired'),
        ]),
      );
    const nsErr = this.checkNamespace(t, namespace, true);
    if (nsErr) return fail(nsErr);
    if (this.store.get(t, t.namespaced ? namespace : '', name))
      return fail(errors.alreadyExists(t.group, t.resource, name));
    for (const f of [
      'uid',
      'creationTimestamp',
      'deletionTimestamp',
      'deletionGracePeriodSeconds',
      'generation',
      'selfLink',
    ])
      delete meta[f];
    const strategy = this.strategy(t);
    const causes = [
      ...nameErrors(t.nameRule, name).map((m) => cause('metadata.name', `Invalid value: "${name}": ${m}`)),
      ...metadataCauses(meta),
    ];
    if (causes.length === 0) strategy?.prepareForCreate?.(obj);
    causes.push(...(strategy?.validate(obj, undefined) ?? []));
    if (causes.length > 0) return fail(this.invalid(t, name, causes));
    meta.uid = randomUUID();
    meta.creationTimestamp = rfc3339(this.clock.now());
    meta.generation = 1;
    const stored = this.store.commit('ADDED', t, obj);
    strategy?.committed?.(stored, undefined);
    return ok(stored);
  }

  /** PUT: replaces the object (or its status), with a conflict when the given resourceVersion is stale. */
  update(
    t: ResourceType,
    namespace: string,
    name: string,
    body: unknown,
    sub: Subresource = undefined,
  ): Result<JsonObject> {
    if (sub === 'scale') return this.updateScale(t, namespace, name, body);
    const env = this.envelope(t, namespace, body);
    if (!env.ok) return env;
    const next = storedForm(t, env.value);
    const meta = metaOf(next);
    if (meta.name !== undefined && meta.name !== name)
      return fail(
        errors.badRequest(
          `the name of the object (${String(meta.name)}) does not match the name on the URL (${name})`,
        ),
      );
    meta.name = name;
    const current = this.store.get(t, t.namespaced ? namespace : '', name);
    if (!current) return fail(errors.notFound(t.group, t.resource, name));
    const stale = staleVersion(t, name, current, meta.resourceVersion);
    if (stale) return fail(stale);
    return served(t, this.write(t, current, next, sub));
  }

  /** The common path of update and patch: carries immutable metadata over, defaults, validates, stores. */
  private write(
    t: ResourceType,
    current: JsonObject,
    proposed: JsonObject,
    sub: Subresource,
  ): Result<JsonObject> {
    const curMeta = metaOf(current);
    let next: JsonObject;
    if (sub === 'status') {
      // The status subresource changes only .status; everything else stays as stored. A Service's labels and
      // annotations follow the request too: upstream's serviceStatusStrategy resets only .spec (its
      // GetResetFields), so a status patch may annotate (the "service status lifecycle" conformance test does).
      next = { ...cloneJson(current), status: cloneJson(proposed.status) };
      if (t.names.kind === 'Service') carryLabelsAndAnnotations(next, proposed);
    } else {
      next = proposed;
      // The main resource never changes status through an update (upstream's PrepareForUpdate).
      if (current.status !== undefined) next.status = cloneJson(current.status);
      else delete next.status;
    }
    const meta = metaOf(next);
    next.metadata = meta;
    for (const f of [
      'uid',
      'creationTimestamp',
      'deletionTimestamp',
      'deletionGracePeriodSeconds',
      'namespace',
      'name',
    ])
      if (curMeta[f] !== undefined) meta[f] = curMeta[f];
      else delete meta[f];
    meta.generation = curMeta.generation;
    delete meta.resourceVersion;
    const strategy = this.strategy(t);
    const causes = metadataCauses(meta);
    if (causes.length === 0 && sub !== 'status') strategy?.prepareForUpdate?.(next, current);
    causes.push(...(strategy?.validate(next, current) ?? []));
    if (causes.length > 0) return fail(this.invalid(t, nameOf(current), causes));
    const specChanged = Object.keys({ ...next, ...current }).some(
      (k) => k !== 'metadata' && k !== 'status' && !jsonEqual(next[k], current[k]),
    );
    if (specChanged) meta.generation = (num(curMeta, 'generation') ?? 0) + 1;
    const curNoRv = { ...current, metadata: { ...curMeta, resourceVersion: undefined } };
    // An update that changes nothing writes nothing (no new resourceVersion, no watch event), as upstream.
    if (jsonEqual(next, curNoRv)) return ok(current);
    if (
      t.names.kind !== 'Namespace' &&
      meta.deletionTimestamp !== undefined &&
      arr(meta, 'finalizers').length === 0 &&
      !this.isGracefulPod(t, next)
    )
      return ok(this.remove(t, next, current));
    const stored = this.store.commit('MODIFIED', t, next, current);
    strategy?.committed?.(stored, current);
    return ok(stored);
  }

  private isGracefulPod(t: ResourceType, obj: JsonObject): boolean {
    return (
      t.names.kind === 'Pod' &&
      metaOf(obj).deletionGracePeriodSeconds !== undefined &&
      metaOf(obj).deletionGracePeriodSeconds !== 0
    );
  }

  private scaleOf(t: ResourceType, obj: JsonObject): JsonObject {
    const meta = metaOf(obj);
    const spec = child(obj, 'spec');
    const sel = child(spec, 'selector');
    const selector = Object.entries(child(sel, 'matchLabels'))
      .map(([k, v]) => `${k}=${String(v)}`)
      .join(',');
    return {
      kind: 'Scale',
      apiVersion: 'autoscaling/v1',
      metadata: {
        name: meta.name,
        namespace: meta.namespace,
        uid: meta.uid,
        resourceVersion: meta.resourceVersion,
        creationTimestamp: meta.creationTimestamp,
      },
      spec: { replicas: num(spec, 'replicas') ?? 0 },
      status: { replicas: num(child(obj, 'status'), 'replicas') ?? 0, selector },
    };
  }

  getScale(t: ResourceType, namespace: string, name: string): Result<JsonObject> {
    const r = this.get(t, namespace, name);
    return r.ok ? ok(this.scaleOf(t, r.value)) : r;
  }

  private updateScale(t: ResourceType, namespace: string, name: string, body: unknown): Result<JsonObject> {
    if (!isObject(body)) return fail(errors.badRequest('the body of the request must be a JSON object'));
    const current = this.store.get(t, namespace, name);
    if (!current) return fail(errors.notFound(t.group, t.resource, name));
    const stale = staleVersion(t, name, current, str(metaOf(body), 'resourceVersion'));
    if (stale) return fail(stale);
    const replicas = child(body, 'spec').replicas;
    if (typeof replicas !== 'number' || !Number.isInteger(replicas) || replicas < 0)
      return fail(
        errors.invalid('autoscaling', 'Scale', name, [
          cause(
            'spec.replicas',
            `Invalid value: ${JSON.stringify(replicas ?? null)}: must be greater than or equal to 0`,
          ),
        ]),
      );
    const next = cloneJson(current);
    next.spec = { ...child(next, 'spec'), replicas };
    const r = this.write(t, current, next, undefined);
    return r.ok ? ok(this.scaleOf(t, r.value)) : r;
  }

  patch(
    t: ResourceType,
    namespace: string,
    name: string,
    type: PatchType,
    patchBody: unknown,
    sub: Subresource = undefined,
  ): Result<JsonObject> {
    const current = this.store.get(t, t.namespaced ? namespace : '', name);
    if (!current) return fail(errors.notFound(t.group, t.resource, name));
    const base = sub === 'scale' ? this.scaleOf(t, current) : servedForm(t, current);
    const patched = applyPatch(type, sub === 'scale' ? 'Scale' : t.names.kind, base, patchBody);
    if ('error' in patched)
      return fail({ ...errors.badRequest(patched.error), code: 422, reason: 'Invalid' });
    const value = patched.value;
    if (!isObject(value)) return fail(errors.badRequest('the patch did not produce an object'));
    if (sub === 'scale') return this.updateScale(t, namespace, name, value);
    // A patch that names a resourceVersion is a precondition; otherwise it applies to the current object.
    const stale = staleVersion(t, name, current, str(metaOf(value), 'resourceVersion'));
    if (stale) return fail(stale);
    const env = this.envelope(t, namespace, value);
    if (!env.ok) return env;
    if (metaOf(env.value).name !== name)
      return fail(errors.badRequest('the name of the object may not be changed by a patch'));
    return served(t, this.write(t, current, storedForm(t, env.value), sub));
  }

  delete(t: ResourceType, namespace: string, name: string, opts: DeleteOptions = {}): Result<JsonObject> {
    return served(t, this.deleteStored(t, namespace, name, opts));
  }

  private deleteStored(
    t: ResourceType,
    namespace: string,
    name: string,
    opts: DeleteOptions,
  ): Result<JsonObject> {
    const current = this.store.get(t, t.namespaced ? namespace : '', name);
    if (!current) return fail(errors.notFound(t.group, t.resource, name));
    const meta = metaOf(current);
    const unmet = opts.preconditions && unmetPrecondition(opts.preconditions, meta);
    if (unmet) return fail(errors.conflict(t.group, t.resource, name, unmet));
    if (t.names.kind === 'Namespace') return ok(this.deleteNamespace(current));
    if (t.names.kind === 'Pod') {
      const graceful = this.deletePodGracefully(t, current, opts.gracePeriodSeconds);
      if (graceful) return ok(graceful);
    }
    if (arr(meta, 'finalizers').length > 0) {
      if (meta.deletionTimestamp !== undefined) return ok(current);
      const next = cloneJson(current);
      metaOf(next).deletionTimestamp = rfc3339(this.clock.now());
      metaOf(next).deletionGracePeriodSeconds = 0;
      return ok(this.store.commit('MODIFIED', t, next, current));
    }
    return ok(this.remove(t, current, current, opts.propagationPolicy));
  }

  /**
   * Pods on a node get a deletionTimestamp and a grace period instead of disappearing: the pod lifecycle
   * controller removes them when they are gone or the period is over. Returns undefined to delete at once.
   */
  private deletePodGracefully(
    t: ResourceType,
    current: JsonObject,
    requested: number | undefined,
  ): JsonObject | undefined {
    const meta = metaOf(current);
    const spec = child(current, 'spec');
    if (!str(spec, 'nodeName')) return undefined;
    const phase = str(child(current, 'status'), 'phase');
    if (phase === 'Succeeded' || phase === 'Failed') return undefined;
    const grace = requested ?? num(spec, 'terminationGracePeriodSeconds') ?? 30;
    if (grace <= 0) return undefined;
    const existing = num(meta, 'deletionGracePeriodSeconds');
    const start =
      meta.deletionTimestamp !== undefined
        ? Date.parse(String(meta.deletionTimestamp)) - (existing ?? 0) * 1000
        : this.clock.now();
    if (existing !== undefined && existing <= grace) return current;
    const next = cloneJson(current);
    const m = metaOf(next);
    m.deletionGracePeriodSeconds = grace;
    m.deletionTimestamp = rfc3339(start + grace * 1000);
    return this.store.commit('MODIFIED', t, next, current);
  }

  /** Removes an object now: a DELETED event, allocator release, dependents collected. */
  remove(
    t: ResourceType,
    obj: JsonObject,
    old: JsonObject,
    propagation: DeleteOptions['propagationPolicy'] = 'Background',
  ): JsonObject {
    if (!this.store.get(t, t.namespaced ? nsOf(obj) : '', nameOf(obj))) return obj;
    const stored = this.store.commit('DELETED', t, obj, old);
    this.strategy(t)?.committed?.(undefined, old);
    this.collectDependents(str(metaOf(obj), 'uid'), nsOf(obj), propagation);
    if (t.namespaced) this.maybeFinishNamespace(nsOf(obj));
    return stored;
  }

  /** Garbage collection by ownerReferences: dependents are deleted (or, for Orphan, released). */
  private collectDependents(
    uid: string | undefined,
    namespace: string,
    propagation: DeleteOptions['propagationPolicy'],
  ): void {
    if (!uid) return;
    for (const t of RESOURCES) {
      if (!t.namespaced) continue;
      for (const obj of this.store.list(t, namespace)) {
        const refs = arr(metaOf(obj), 'ownerReferences');
        if (!refs.some((r) => str(r, 'uid') === uid)) continue;
        if (propagation === 'Orphan') {
          const next = cloneJson(obj);
          metaOf(next).ownerReferences = refs.filter((r) => str(r, 'uid') !== uid);
          this.write(t, obj, next, undefined);
        } else this.delete(t, namespace, nameOf(obj), {});
      }
    }
  }

  private deleteNamespace(current: JsonObject): JsonObject {
    const nsType = resourceByKind('Namespace');
    const name = nameOf(current);
    let ns = current;
    if (str(child(current, 'status'), 'phase') !== 'Terminating') {
      const next = cloneJson(current);
      metaOf(next).deletionTimestamp = rfc3339(this.clock.now());
      next.status = { phase: 'Terminating' };
      ns = this.store.commit('MODIFIED', nsType, next, current);
    }
    for (const t of RESOURCES) {
      if (!t.namespaced) continue;
      for (const obj of this.store.list(t, name)) this.delete(t, name, nameOf(obj), {});
    }
    this.maybeFinishNamespace(name);
    return this.store.get(nsType, '', name) ?? ns;
  }

  private maybeFinishNamespace(name: string): void {
    const nsType = resourceByKind('Namespace');
    const ns = this.store.get(nsType, '', name);
    if (!ns || str(child(ns, 'status'), 'phase') !== 'Terminating') return;
    if (RESOURCES.some((t) => t.namespaced && this.store.count(t, name) > 0)) return;
    this.store.commit('DELETED', nsType, ns, ns);
  }

  deleteCollection(
    t: ResourceType,
    namespace: string | undefined,
    list: ListOptions,
    opts: DeleteOptions,
  ): Result<ListResult> {
    const r = this.list(t, namespace, { ...list, limit: undefined, continueToken: undefined });
    if (!r.ok) return r;
    const items: JsonObject[] = [];
    for (const obj of r.value.items) {
      const d = this.delete(t, nsOf(obj), nameOf(obj), opts);
      if (d.ok) items.push(d.value);
    }
    return ok({ items, resourceVersion: String(this.store.resourceVersion) });
  }
}
