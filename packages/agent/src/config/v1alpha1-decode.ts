// Text (YAML or JSON; JSON is YAML) → a partial v1alpha1 document. Like upstream's loadConfig: apiVersion and
// kind must name KubeProxyConfiguration v1alpha1; decoding is strict first, and when the only strict failures
// are unknown fields it decodes leniently and warns, naming them; a value of the wrong type is an error. YAML
// is read as 1.1, as Go's YAML library does, so `yes`/`no`/`on`/`off` are booleans there as they are upstream.
import { parseAllDocuments } from 'yaml';
import { FieldReader, isMapping } from './field-reader.js';
import type { DecodeSink } from './field-reader.js';
import { describeValue, problem } from './problems.js';
import type { ConfigProblem } from './problems.js';
import { API_VERSION, KIND } from './v1alpha1-types.js';
import type { PartialV1Alpha1 } from './v1alpha1-types.js';
import { errorMessage } from '../util/error-message.js';

export type DecodeResult =
  | { readonly ok: true; readonly doc: PartialV1Alpha1; readonly unknownFields: readonly string[] }
  | { readonly ok: false; readonly problems: readonly ConfigProblem[] };

export function decodeKubeProxyConfiguration(text: string): DecodeResult {
  const parsed = parseYaml(text);
  if (!parsed.ok) return parsed;
  const root = parsed.value;
  if (root === undefined || root === null) {
    return fail(
      '',
      `the configuration is empty; it needs at least "apiVersion: ${API_VERSION}" and "kind: ${KIND}"`,
    );
  }
  if (!isMapping(root)) return fail('', `the configuration must be a mapping, got ${describeValue(root)}`);

  const typeProblems = checkTypeMeta(root);
  if (typeProblems.length > 0) return { ok: false, problems: typeProblems };

  const sink: DecodeSink = { problems: [], unknownFields: [] };
  const reader = new FieldReader(root, '', sink);
  reader.ignore('apiVersion');
  reader.ignore('kind');
  const doc = readDocument(reader);
  reader.finish();
  if (sink.problems.length > 0) return { ok: false, problems: sink.problems };
  return { ok: true, doc, unknownFields: sink.unknownFields };
}

function fail(field: string, message: string): DecodeResult {
  return { ok: false, problems: [problem(field, message)] };
}

type YamlParse =
  | { readonly ok: true; readonly value: unknown }
  | { readonly ok: false; readonly problems: readonly ConfigProblem[] };

function parseYaml(text: string): YamlParse {
  const docs = parseAllDocuments(text, { version: '1.1', uniqueKeys: false, prettyErrors: true });
  // parseAllDocuments returns an EmptyStream (an array with no documents) for empty input.
  const list = Array.isArray(docs) ? docs : [docs];
  const problems: ConfigProblem[] = [];
  for (const doc of list) {
    for (const error of doc.errors) {
      problems.push(problem('', `malformed YAML: ${firstLine(error.message)}`));
    }
  }
  if (problems.length > 0) return { ok: false, problems };
  if (list.length > 1) {
    return {
      ok: false,
      problems: [problem('', `expected one YAML document, found ${list.length} (separated by "---")`)],
    };
  }
  const only = list[0];
  if (only === undefined) return { ok: true, value: undefined };
  try {
    return { ok: true, value: only.toJS({ maxAliasCount: 100 }) };
  } catch (error: unknown) {
    const message = errorMessage(error);
    return { ok: false, problems: [problem('', `malformed YAML: ${firstLine(message)}`)] };
  }
}

function firstLine(message: string): string {
  return message.split('\n', 1)[0] ?? message;
}

function checkTypeMeta(root: Readonly<Record<string, unknown>>): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  const apiVersion = root['apiVersion'];
  const kind = root['kind'];
  if (apiVersion === undefined || apiVersion === null || apiVersion === '') {
    problems.push(problem('apiVersion', `missing; expected "${API_VERSION}"`));
  } else if (apiVersion !== API_VERSION) {
    problems.push(
      problem(
        'apiVersion',
        `must be "${API_VERSION}" (the only version kube-proxy reads), got ${describeValue(apiVersion)}`,
      ),
    );
  }
  if (kind === undefined || kind === null || kind === '') {
    problems.push(problem('kind', `missing; expected "${KIND}"`));
  } else if (kind !== KIND) {
    problems.push(problem('kind', `must be "${KIND}", got ${describeValue(kind)}`));
  }
  return problems;
}

function readDocument(r: FieldReader): PartialV1Alpha1 {
  return {
    featureGates: r.boolMap('featureGates'),
    clientConnection: r.object('clientConnection', (c) => ({
      kubeconfig: c.string('kubeconfig'),
      acceptContentTypes: c.string('acceptContentTypes'),
      contentType: c.string('contentType'),
      qps: c.float('qps'),
      burst: c.int32('burst'),
    })),
    logging: r.object('logging', (l) => {
      // Alpha output options (text/json split streams, buffer sizes) are accepted and not used.
      l.ignore('options');
      return {
        format: l.string('format'),
        flushFrequency: l.durationOrNanos('flushFrequency'),
        verbosity: l.uint32('verbosity'),
        vmodule: l.objectList('vmodule', (v) => ({
          filePattern: v.string('filePattern') ?? '',
          verbosity: v.uint32('verbosity') ?? 0,
        })),
      };
    }),
    hostnameOverride: r.string('hostnameOverride'),
    bindAddress: r.string('bindAddress'),
    healthzBindAddress: r.string('healthzBindAddress'),
    metricsBindAddress: r.string('metricsBindAddress'),
    bindAddressHardFail: r.boolean('bindAddressHardFail'),
    enableProfiling: r.boolean('enableProfiling'),
    showHiddenMetricsForVersion: r.string('showHiddenMetricsForVersion'),
    mode: r.string('mode'),
    iptables: r.object('iptables', (t) => ({
      masqueradeBit: t.int32('masqueradeBit'),
      masqueradeAll: t.boolean('masqueradeAll'),
      localhostNodePorts: t.boolean('localhostNodePorts'),
      syncPeriod: t.duration('syncPeriod'),
      minSyncPeriod: t.duration('minSyncPeriod'),
    })),
    ipvs: r.object('ipvs', (v) => ({
      syncPeriod: v.duration('syncPeriod'),
      minSyncPeriod: v.duration('minSyncPeriod'),
      scheduler: v.string('scheduler'),
      excludeCIDRs: v.stringList('excludeCIDRs'),
      strictARP: v.boolean('strictARP'),
      tcpTimeout: v.duration('tcpTimeout'),
      tcpFinTimeout: v.duration('tcpFinTimeout'),
      udpTimeout: v.duration('udpTimeout'),
    })),
    nftables: r.object('nftables', (n) => ({
      masqueradeBit: n.int32('masqueradeBit'),
      masqueradeAll: n.boolean('masqueradeAll'),
      syncPeriod: n.duration('syncPeriod'),
      minSyncPeriod: n.duration('minSyncPeriod'),
    })),
    winkernel: r.object('winkernel', (w) => ({
      networkName: w.string('networkName'),
      sourceVip: w.string('sourceVip'),
      enableDSR: w.boolean('enableDSR'),
      rootHnsEndpointName: w.string('rootHnsEndpointName'),
      forwardHealthCheckVip: w.boolean('forwardHealthCheckVip'),
    })),
    detectLocalMode: r.string('detectLocalMode'),
    detectLocal: r.object('detectLocal', (d) => ({
      bridgeInterface: d.string('bridgeInterface'),
      interfaceNamePrefix: d.string('interfaceNamePrefix'),
    })),
    clusterCIDR: r.string('clusterCIDR'),
    nodePortAddresses: r.stringList('nodePortAddresses'),
    oomScoreAdj: r.int32('oomScoreAdj'),
    conntrack: r.object('conntrack', (c) => ({
      maxPerCore: c.int32('maxPerCore'),
      min: c.int32('min'),
      tcpEstablishedTimeout: c.duration('tcpEstablishedTimeout'),
      tcpCloseWaitTimeout: c.duration('tcpCloseWaitTimeout'),
      tcpBeLiberal: c.boolean('tcpBeLiberal'),
      udpTimeout: c.duration('udpTimeout'),
      udpStreamTimeout: c.duration('udpStreamTimeout'),
    })),
    configSyncPeriod: r.duration('configSyncPeriod'),
    portRange: r.string('portRange'),
    windowsRunAsService: r.boolean('windowsRunAsService'),
  };
}
