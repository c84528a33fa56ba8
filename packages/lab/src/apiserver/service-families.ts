// A Service's IP families, as kube-apiserver decides them (pkg/registry/core/service/storage/alloc.go,
// initIPFamilyFields) and validates them (pkg/apis/core/validation, ValidateServiceClusterIPsRelatedFields and the
// upgrade/downgrade checks). The cluster's families are those of --service-cluster-ip-range (one range per family,
// primary first), not of the ServiceCIDR objects: a cluster is dual-stack for Services only when the API server
// was started so, as upstream.
//
// Defaults fill in before allocation (prepare); every refusal is found by validation afterwards, so a request that
// fails never holds an address (allocators follow only committed objects).
import { arr, child, str, type JsonObject } from './json.js';
import { ipToBigInt } from './ipnet.js';
import { cause, type StatusCause } from './status.js';

export type ServiceIPFamily = 'IPv4' | 'IPv6';
export const SERVICE_IP_FAMILIES: readonly ServiceIPFamily[] = ['IPv4', 'IPv6'];
export const IP_FAMILY_POLICIES = ['PreferDualStack', 'RequireDualStack', 'SingleStack'] as const;

export const familyName = (f: 4 | 6): ServiceIPFamily => (f === 4 ? 'IPv4' : 'IPv6');
const otherFamily = (f: ServiceIPFamily): ServiceIPFamily => (f === 'IPv4' ? 'IPv6' : 'IPv4');

/** The family of a valid IP; undefined for "None" and anything that is not an address. */
export function familyOfIP(ip: unknown): ServiceIPFamily | undefined {
  const parsed = typeof ip === 'string' ? ipToBigInt(ip) : undefined;
  return parsed ? familyName(parsed.family) : undefined;
}

const strings = (spec: JsonObject, key: string): string[] =>
  arr(spec, key).filter((v): v is string => typeof v === 'string');
const isHeadless = (spec: JsonObject): boolean => spec.clusterIP === 'None';
const hasSelector = (spec: JsonObject): boolean => Object.keys(child(spec, 'selector')).length > 0;
/** Headless without a selector: its endpoints are someone else's, of any family, so upstream lets it ask for both. */
const headlessSelectorless = (spec: JsonObject): boolean => isHeadless(spec) && !hasSelector(spec);
const sameList = (a: readonly string[], b: readonly string[]): boolean =>
  a.length === b.length && a.every((x, i) => x === b[i]);

/**
 * An update that gives fewer clusterIPs or ipFamilies than were stored, without saying SingleStack: upstream
 * refuses it (validation below), so nothing is defaulted or allocated for it.
 */
export function releasesSecondary(spec: JsonObject, oldSpec: JsonObject | undefined): boolean {
  if (!oldSpec || spec.ipFamilyPolicy === 'SingleStack') return false;
  const fewer = (key: string): boolean => {
    const now = strings(spec, key);
    return now.length > 0 && now.length < strings(oldSpec, key).length;
  };
  return fewer('clusterIPs') || fewer('ipFamilies');
}

/** ipFamilyPolicy when the request has none: the stored one, else RequireDualStack for headless+selectorless. */
function defaultPolicy(spec: JsonObject, oldSpec: JsonObject | undefined): void {
  if (spec.ipFamilyPolicy !== undefined) return;
  const before = str(oldSpec, 'ipFamilyPolicy');
  spec.ipFamilyPolicy = before ?? (headlessSelectorless(spec) ? 'RequireDualStack' : 'SingleStack');
}

/** Going SingleStack on an update with the stored lists unchanged releases the secondary IP and family. */
function downgradeToSingleStack(spec: JsonObject, oldSpec: JsonObject | undefined): void {
  if (!oldSpec || spec.ipFamilyPolicy !== 'SingleStack') return;
  for (const key of ['clusterIPs', 'ipFamilies']) {
    const now = strings(spec, key);
    if (now.length > 1 && sameList(now, strings(oldSpec, key))) spec[key] = now.slice(0, 1);
  }
}

/**
 * Fills spec.ipFamilyPolicy and spec.ipFamilies as kube-apiserver does, given the cluster's Service families
 * (primary first). Leaves anything contradictory as it is, for validation to refuse.
 */
export function initIPFamilyFields(
  spec: JsonObject,
  oldSpec: JsonObject | undefined,
  cluster: readonly ServiceIPFamily[],
): void {
  if (spec.type === 'ExternalName') return;
  defaultPolicy(spec, oldSpec);
  downgradeToSingleStack(spec, oldSpec);
  const families = strings(spec, 'ipFamilies');
  if (families.length !== arr(spec, 'ipFamilies').length) return;
  // Families follow the given clusterIPs where the request names none (only those the cluster has).
  for (const [i, ip] of strings(spec, 'clusterIPs').entries()) {
    const family = familyOfIP(ip);
    if (family === undefined) break;
    if (i >= families.length && cluster.includes(family)) families.push(family);
  }
  const primary = cluster[0] ?? 'IPv4';
  if (families.length === 0) families.push(primary);
  const first = families[0] as ServiceIPFamily;
  // A second family: for any dual-stack ask when headless+selectorless; otherwise only when the cluster has it
  // (RequireDualStack on a single-stack cluster is refused by validation, not quietly downgraded).
  const wantsDual = spec.ipFamilyPolicy !== 'SingleStack';
  const canDual = headlessSelectorless(spec) || cluster.length === 2;
  if (wantsDual && canDual && families.length === 1) families.push(otherFamily(first));
  spec.ipFamilies = families;
}

/** The family checks of ValidateServiceClusterIPsRelatedFields: values, duplicates, IPs against families. */
function standaloneCauses(spec: JsonObject): StatusCause[] {
  const out: StatusCause[] = [];
  const seen = new Set<unknown>();
  arr(spec, 'ipFamilies').forEach((f, i) => {
    if (!(SERVICE_IP_FAMILIES as readonly unknown[]).includes(f))
      out.push(
        cause(
          `spec.ipFamilies[${i}]`,
          `Unsupported value: ${JSON.stringify(f)}: supported values: "IPv4", "IPv6"`,
          'FieldValueNotSupported',
        ),
      );
    if (seen.has(f))
      out.push(
        cause(`spec.ipFamilies[${i}]`, `Duplicate value: ${JSON.stringify(f)}`, 'FieldValueDuplicate'),
      );
    seen.add(f);
  });
  const policy = spec.ipFamilyPolicy;
  if (policy !== undefined && !(IP_FAMILY_POLICIES as readonly unknown[]).includes(policy))
    out.push(
      cause(
        'spec.ipFamilyPolicy',
        `Unsupported value: ${JSON.stringify(policy)}: supported values: ${IP_FAMILY_POLICIES.map((p) => `"${p}"`).join(', ')}`,
        'FieldValueNotSupported',
      ),
    );
  const ips = arr(spec, 'clusterIPs');
  const listed = JSON.stringify(ips);
  if (ips.length > 2)
    out.push(cause('spec.clusterIPs', `Invalid value: ${listed}: may only hold up to 2 values`));
  if (ips.length === 2 && familyOfIP(ips[0]) !== undefined && familyOfIP(ips[0]) === familyOfIP(ips[1]))
    out.push(
      cause(
        'spec.clusterIPs',
        `Invalid value: ${listed}: may specify no more than one IP for each IP family`,
      ),
    );
  if (!isHeadless(spec))
    ips.forEach((ip, i) => {
      const want = arr(spec, 'ipFamilies')[i];
      const got = familyOfIP(ip);
      if (got !== undefined && typeof want === 'string' && want !== got)
        out.push(
          cause(
            `spec.clusterIPs[${i}]`,
            `Invalid value: ${JSON.stringify(ip)}: expected an ${want} value as indicated by \`ipFamilies[${i}]\``,
          ),
        );
    });
  return out;
}

/** What the policy and the families ask of this cluster (alloc.go's refusals). */
function clusterCauses(spec: JsonObject, cluster: readonly ServiceIPFamily[]): StatusCause[] {
  const out: StatusCause[] = [];
  const policy = JSON.stringify(spec.ipFamilyPolicy);
  if (spec.ipFamilyPolicy === 'SingleStack') {
    if (arr(spec, 'clusterIPs').length === 2)
      out.push(
        cause(
          'spec.ipFamilyPolicy',
          `Invalid value: ${policy}: must be 'RequireDualStack' or 'PreferDualStack' when multiple cluster IPs are specified`,
        ),
      );
    if (arr(spec, 'ipFamilies').length === 2)
      out.push(
        cause(
          'spec.ipFamilyPolicy',
          `Invalid value: ${policy}: must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified`,
        ),
      );
  }
  if (headlessSelectorless(spec)) return out;
  if (spec.ipFamilyPolicy === 'RequireDualStack' && cluster.length < 2)
    out.push(
      cause(
        'spec.ipFamilyPolicy',
        `Invalid value: ${policy}: this cluster is not configured for dual-stack services`,
      ),
    );
  arr(spec, 'ipFamilies').forEach((f, i) => {
    if (
      typeof f === 'string' &&
      (SERVICE_IP_FAMILIES as readonly string[]).includes(f) &&
      !cluster.includes(f as ServiceIPFamily)
    )
      out.push(
        cause(`spec.ipFamilies[${i}]`, `Invalid value: ${JSON.stringify(f)}: not configured on this cluster`),
      );
  });
  return out;
}

/** An update may add a secondary family, or drop it with SingleStack; never change the primary. */
function updateCauses(spec: JsonObject, oldSpec: JsonObject): StatusCause[] {
  const out: StatusCause[] = [];
  if (oldSpec.type === 'ExternalName' || isHeadless(spec) || isHeadless(oldSpec)) return out;
  const policy = JSON.stringify(spec.ipFamilyPolicy ?? null);
  const before = strings(oldSpec, 'ipFamilies');
  const now = strings(spec, 'ipFamilies');
  if (before.length > 0 && now.length > 0 && before[0] !== now[0])
    out.push(cause('spec.ipFamilies[0]', `Invalid value: ${JSON.stringify(now)}: may not change once set`));
  const ipsBefore = strings(oldSpec, 'clusterIPs');
  const ipsNow = strings(spec, 'clusterIPs');
  if (ipsBefore.length === 2 && ipsNow.length === 2 && ipsBefore[1] !== ipsNow[1])
    out.push(
      cause('spec.clusterIPs[1]', `Invalid value: ${JSON.stringify(ipsNow)}: may not change once set`),
    );
  if (spec.ipFamilyPolicy !== 'SingleStack') {
    if (ipsNow.length === 1 && ipsBefore.length === 2)
      out.push(
        cause(
          'spec.ipFamilyPolicy',
          `Invalid value: ${policy}: must be 'SingleStack' to release the secondary cluster IP`,
        ),
      );
    if (now.length === 1 && before.length === 2)
      out.push(
        cause(
          'spec.ipFamilyPolicy',
          `Invalid value: ${policy}: must be 'SingleStack' to release the secondary IP family`,
        ),
      );
  }
  return out;
}

/** Every refusal about the Service's families, on create (oldSpec undefined) and update. */
export function ipFamilyCauses(
  spec: JsonObject,
  oldSpec: JsonObject | undefined,
  cluster: readonly ServiceIPFamily[],
): StatusCause[] {
  if (spec.type === 'ExternalName') return [];
  const out = standaloneCauses(spec);
  if (out.length > 0) return out;
  out.push(...clusterCauses(spec, cluster));
  if (oldSpec) out.push(...updateCauses(spec, oldSpec));
  return out;
}
