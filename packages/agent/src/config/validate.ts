// Validation of a defaulted document (upstream pkg/proxy/apis/config/validation). Every problem is collected and
// names its v1alpha1 field; sync periods are checked under the section the mode reads them from, which is the
// section the operator has to edit.
import { parseCIDRSloppy, parseIPSloppy } from '../model/ip.js';
import { NODEPORT_ADDRESSES_PRIMARY } from '../model/nodeport-addresses.js';
import { formatGoDuration } from './duration.js';
import { IPVS_FEATURE_GATE, resolveFeatureGates } from './feature-gates.js';
import { checkIPPort } from './host-port.js';
import { problem } from './problems.js';
import type { ConfigProblem } from './problems.js';
import { isOneOf } from './choice.js';
import { DETECT_LOCAL_MODE_SETTINGS, LOGGING_FORMATS, PROXY_MODE_SETTINGS } from './v1alpha1-types.js';
import type { KubeProxyConfigurationV1Alpha1 } from './v1alpha1-types.js';

/** The section whose syncPeriod/minSyncPeriod/masqueradeAll a mode uses (upstream's v1alpha1 conversion). */
export function periodSectionFor(mode: string): 'iptables' | 'ipvs' | 'nftables' {
  return mode === 'ipvs' || mode === 'nftables' ? mode : 'iptables';
}

export function validateV1Alpha1(doc: KubeProxyConfigurationV1Alpha1): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const add = (field: string, message: string): void => void problems.push(problem(field, message));

  if (!isOneOf(PROXY_MODE_SETTINGS, doc.mode)) {
    add(
      'mode',
      `must be "iptables", "ipvs" or "nftables" (or "" for iptables), got ${JSON.stringify(doc.mode)}`,
    );
  } else if (doc.mode === 'ipvs') {
    problems.push(...checkIPVS(doc));
  }

  const section = periodSectionFor(doc.mode);
  const { syncPeriod, minSyncPeriod } = doc[section];
  if (syncPeriod <= 0) {
    add(`${section}.syncPeriod`, `must be greater than 0, got ${formatGoDuration(syncPeriod)}`);
  }
  if (minSyncPeriod < 0) {
    add(
      `${section}.minSyncPeriod`,
      `must be greater than or equal to 0, got ${formatGoDuration(minSyncPeriod)}`,
    );
  } else if (syncPeriod > 0 && minSyncPeriod > syncPeriod) {
    add(
      `${section}.minSyncPeriod`,
      `must be less than or equal to ${section}.syncPeriod (${formatGoDuration(syncPeriod)}), got ${formatGoDuration(minSyncPeriod)}`,
    );
  }

  for (const s of ['iptables', 'nftables'] as const) {
    const bit = doc[s].masqueradeBit;
    if (bit < 0 || bit > 31) add(`${s}.masqueradeBit`, `must be in the range [0, 31], got ${bit}`);
  }

  if (doc.oomScoreAdj < -1000 || doc.oomScoreAdj > 1000) {
    add('oomScoreAdj', `must be in the range [-1000, 1000], got ${doc.oomScoreAdj}`);
  }
  for (const key of ['maxPerCore', 'min'] as const) {
    const value = doc.conntrack[key];
    if (value < 0) add(`conntrack.${key}`, `must be greater than or equal to 0, got ${value}`);
  }
  for (const key of [
    'tcpEstablishedTimeout',
    'tcpCloseWaitTimeout',
    'udpTimeout',
    'udpStreamTimeout',
  ] as const) {
    const value = doc.conntrack[key];
    if (value < 0)
      add(`conntrack.${key}`, `must be greater than or equal to 0, got ${formatGoDuration(value)}`);
  }
  if (doc.configSyncPeriod <= 0) {
    add('configSyncPeriod', `must be greater than 0, got ${formatGoDuration(doc.configSyncPeriod)}`);
  }
  if (doc.clientConnection.burst < 0) {
    add('clientConnection.burst', `must be greater than or equal to 0, got ${doc.clientConnection.burst}`);
  }

  if (parseIPSloppy(doc.bindAddress) === undefined) {
    add('bindAddress', `must be an IP address, got ${JSON.stringify(doc.bindAddress)}`);
  }
  for (const key of ['healthzBindAddress', 'metricsBindAddress'] as const) {
    // '' is reachable only through flags (--healthz-port=0 and friends) and means "do not serve".
    const issue = doc[key] === '' ? undefined : checkIPPort(doc[key]);
    if (issue !== undefined) add(key, issue);
  }

  problems.push(...checkNodePortAddresses(doc.nodePortAddresses ?? []));
  problems.push(...checkDetectLocal(doc));
  problems.push(...resolveFeatureGates(doc.featureGates).problems);

  if (!isOneOf(LOGGING_FORMATS, doc.logging.format)) {
    add('logging.format', `must be "text" or "json", got ${JSON.stringify(doc.logging.format)}`);
  }
  doc.logging.vmodule.forEach((entry, i) => {
    if (entry.filePattern === '') add(`logging.vmodule[${i}].filePattern`, 'must not be empty');
  });
  if (doc.showHiddenMetricsForVersion !== '' && !/^\d+\.\d+$/.test(doc.showHiddenMetricsForVersion)) {
    add(
      'showHiddenMetricsForVersion',
      `must be a version "major.minor" such as "1.34", got ${JSON.stringify(doc.showHiddenMetricsForVersion)}`,
    );
  }
  return problems;
}

/**
 * ipvs mode (upstream validates the ipvs section only in this mode): the KubeProxyIPVS gate on (KEP-5495: on by
 * default, to be turned off and then removed), timeouts not negative, excludeCIDRs CIDRs. The scheduler is not
 * checked here: as upstream, the kernel is asked at start whether it has it.
 */
function checkIPVS(doc: KubeProxyConfigurationV1Alpha1): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  if (doc.featureGates[IPVS_FEATURE_GATE] === false) {
    problems.push(
      problem('mode', `ipvs mode needs the ${IPVS_FEATURE_GATE} feature gate, which featureGates turns off`),
    );
  }
  for (const key of ['tcpTimeout', 'tcpFinTimeout', 'udpTimeout'] as const) {
    const value = doc.ipvs[key];
    if (value < 0)
      problems.push(
        problem(`ipvs.${key}`, `must be greater than or equal to 0, got ${formatGoDuration(value)}`),
      );
  }
  (doc.ipvs.excludeCIDRs ?? []).forEach((entry, i) => {
    if (parseCIDRSloppy(entry) === undefined)
      problems.push(problem(`ipvs.excludeCIDRs[${i}]`, `must be a CIDR, got ${JSON.stringify(entry)}`));
  });
  return problems;
}

function checkNodePortAddresses(addresses: readonly string[]): ConfigProblem[] {
  if (addresses.length === 1 && addresses[0] === NODEPORT_ADDRESSES_PRIMARY) return [];
  const problems: ConfigProblem[] = [];
  addresses.forEach((entry, i) => {
    const field = `nodePortAddresses[${i}]`;
    if (entry === NODEPORT_ADDRESSES_PRIMARY) {
      problems.push(problem(field, '"primary" must be the only entry'));
    } else if (parseCIDRSloppy(entry) === undefined) {
      problems.push(
        problem(field, `must be a CIDR (or the single entry "primary"), got ${JSON.stringify(entry)}`),
      );
    }
  });
  return problems;
}

function checkDetectLocal(doc: KubeProxyConfigurationV1Alpha1): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  if (!isOneOf(DETECT_LOCAL_MODE_SETTINGS, doc.detectLocalMode)) {
    const known = DETECT_LOCAL_MODE_SETTINGS.filter((m) => m !== '').join(', ');
    problems.push(
      problem('detectLocalMode', `must be one of ${known}, got ${JSON.stringify(doc.detectLocalMode)}`),
    );
  } else if (doc.detectLocalMode === 'BridgeInterface' && doc.detectLocal.bridgeInterface === '') {
    problems.push(
      problem('detectLocal.bridgeInterface', 'must be set when detectLocalMode is BridgeInterface'),
    );
  } else if (doc.detectLocalMode === 'InterfaceNamePrefix' && doc.detectLocal.interfaceNamePrefix === '') {
    problems.push(
      problem('detectLocal.interfaceNamePrefix', 'must be set when detectLocalMode is InterfaceNamePrefix'),
    );
  }
  if (doc.clusterCIDR !== '') {
    const entries = doc.clusterCIDR.split(',');
    const families: string[] = [];
    for (const entry of entries) {
      const cidr = parseCIDRSloppy(entry);
      if (cidr === undefined) {
        problems.push(problem('clusterCIDR', `${JSON.stringify(entry)} is not a valid CIDR`));
      } else {
        families.push(cidr.family);
      }
    }
    if (entries.length > 2) {
      problems.push(
        problem('clusterCIDR', `must hold at most one CIDR per IP family, got ${entries.length}`),
      );
    } else if (families.length === 2 && families[0] === families[1]) {
      problems.push(
        problem('clusterCIDR', `must hold at most one CIDR per IP family, got two ${families[0]} CIDRs`),
      );
    }
  }
  return problems;
}
