// Where the API server is and how to authenticate to it, decided the way upstream kube-proxy decides
// (cmd/kube-proxy/app/server.go createClient): neither --kubeconfig nor --master → in-cluster service account;
// otherwise the kubeconfig file (only the explicit path: $KUBECONFIG is not read), with --master replacing the
// server. @kubernetes/client-node's KubeConfig does the loading and the authentication (tokens, token files,
// client certificates, CA, insecure-skip-tls-verify, exec plugins); requests are our own (api-client.ts).
import { accessSync, constants, readFileSync, statSync } from 'node:fs';
import { isIPv6 } from 'node:net';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import type { Cluster, Context, User } from '@kubernetes/client-node';
import { parse as parseYaml } from 'yaml';
import { errorMessage } from '../util/error-message.js';

export const SERVICE_ACCOUNT_ROOT = '/var/run/secrets/kubernetes.io/serviceaccount';

export interface ClientConnectionOptions {
  /** --kubeconfig / clientConnection.kubeconfig; "" or undefined for none. */
  readonly kubeconfig?: string;
  /** --master: overrides the kubeconfig's server (or is the whole config without a kubeconfig). */
  readonly master?: string;
  /** clientConnection.qps / burst (upstream defaults 5 / 10). */
  readonly qps?: number;
  readonly burst?: number;
  /** In-cluster inputs, injectable for tests: the service-account folder and the environment. */
  readonly inCluster?: {
    readonly root?: string;
    readonly env?: Readonly<Record<string, string | undefined>>;
  };
}

export type ClientConfigSource = 'kubeconfig' | 'master' | 'in-cluster';

export interface ClientConfig {
  readonly server: URL;
  readonly source: ClientConfigSource;
  /** For the startup log: which file / context, or which service account folder. */
  readonly description: string;
  readonly kubeConfig: KubeConfig;
  readonly qps: number;
  readonly burst: number;
  /** Things that work but deserve a log line (e.g. no CA in the service account folder). */
  readonly warnings: readonly string[];
}

export type ClientConfigErrorCode =
  | 'KubeconfigNotFound'
  | 'KubeconfigUnreadable'
  | 'KubeconfigInvalid'
  | 'InClusterUnavailable'
  | 'InvalidServer';

export interface ClientConfigError {
  readonly code: ClientConfigErrorCode;
  /** The file at fault, when there is one. */
  readonly file?: string;
  /** The field at fault, as a path in the file (e.g. "clusters[name=lab].cluster.server"). */
  readonly field?: string;
  readonly message: string;
}

export type ClientConfigResult =
  | { readonly ok: true; readonly config: ClientConfig }
  | { readonly ok: false; readonly error: ClientConfigError };

const DEFAULT_QPS = 5;
const DEFAULT_BURST = 10;

function failure(error: ClientConfigError): ClientConfigResult {
  return { ok: false, error };
}

function parseServer(server: string): URL | string {
  let url: URL;
  try {
    url = new URL(server);
  } catch {
    return `${JSON.stringify(server)} is not a URL`;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    return `${JSON.stringify(server)} is not an http(s) URL`;
  return url;
}

export function loadClientConfig(options: ClientConnectionOptions): ClientConfigResult {
  const kubeconfig = options.kubeconfig ?? '';
  const master = options.master ?? '';
  const rate = { qps: options.qps ?? DEFAULT_QPS, burst: options.burst ?? DEFAULT_BURST };
  if (kubeconfig === '' && master === '') return loadInCluster(options.inCluster ?? {}, rate);
  if (kubeconfig === '') return masterOnly(master, rate);
  return loadKubeconfigFile(kubeconfig, master, rate);
}

interface Rate {
  readonly qps: number;
  readonly burst: number;
}

function masterOnly(master: string, rate: Rate): ClientConfigResult {
  const url = parseServer(master);
  if (typeof url === 'string')
    return failure({ code: 'InvalidServer', field: '--master', message: `--master: ${url}` });
  const kc = new KubeConfig();
  kc.loadFromClusterAndUser(
    { name: 'master', server: master.replace(/\/$/, ''), skipTLSVerify: false },
    { name: 'anonymous' },
  );
  return {
    ok: true,
    config: {
      server: url,
      source: 'master',
      description: `--master ${master}`,
      kubeConfig: kc,
      ...rate,
      warnings: [],
    },
  };
}

function loadKubeconfigFile(file: string, master: string, rate: Rate): ClientConfigResult {
  const refuse = (code: ClientConfigError['code'], what: string): ClientConfigResult =>
    failure({ code, file, message: `kubeconfig ${file} ${what}` });
  try {
    if (!statSync(file).isFile()) return refuse('KubeconfigUnreadable', 'is not a file');
  } catch (err) {
    return refuse('KubeconfigNotFound', `cannot be read: ${errorMessage(err)}`);
  }
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    return refuse('KubeconfigUnreadable', `cannot be read: ${errorMessage(err)}`);
  }
  // Parse once ourselves for an error with a line number; the library's own errors are terse.
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (err) {
    return refuse('KubeconfigInvalid', `is not valid YAML: ${errorMessage(err)}`);
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc))
    return refuse('KubeconfigInvalid', 'is empty or not a YAML mapping');

  const kc = new KubeConfig();
  try {
    kc.loadFromFile(file);
  } catch (err) {
    // The library names the entry ("clusters[0].cluster.server is missing").
    return failure({ code: 'KubeconfigInvalid', file, message: `kubeconfig ${file}: ${errorMessage(err)}` });
  }
  const invalid = (field: string, what: string): ClientConfigResult =>
    failure({ code: 'KubeconfigInvalid', file, field, message: `kubeconfig ${file}: ${field} ${what}` });

  const contextName = kc.getCurrentContext();
  if (!contextName) return invalid('current-context', 'is not set');
  const context: Context | null = kc.getContextObject(contextName);
  if (!context)
    return invalid('current-context', `names ${JSON.stringify(contextName)}, which is not in contexts`);
  const ctxField = `contexts[name=${contextName}].context`;
  const cluster: Cluster | null = context.cluster ? kc.getCluster(context.cluster) : null;
  if (!cluster)
    return invalid(
      `${ctxField}.cluster`,
      `names ${JSON.stringify(context.cluster ?? '')}, which is not in clusters`,
    );
  let user: User | null = null;
  if (context.user) {
    user = kc.getUser(context.user);
    if (!user)
      return invalid(`${ctxField}.user`, `names ${JSON.stringify(context.user)}, which is not in users`);
  }
  const clusterField = `clusters[name=${cluster.name}].cluster`;
  // Referenced files are read by the library on every request; a missing one should fail here, by name.
  const files: [string, string | undefined][] = [
    [`${clusterField}.certificate-authority`, cluster.caFile],
    [`users[name=${user?.name ?? ''}].user.client-certificate`, user?.certFile],
    [`users[name=${user?.name ?? ''}].user.client-key`, user?.keyFile],
  ];
  for (const [field, path] of files) {
    if (typeof path !== 'string' || path === '') continue; // the library leaves absent fields null or undefined
    try {
      accessSync(path, constants.R_OK);
    } catch (err) {
      return invalid(field, `names ${path}, which cannot be read: ${errorMessage(err)}`);
    }
  }

  let server = cluster.server;
  if (master !== '') {
    const url = parseServer(master);
    if (typeof url === 'string')
      return failure({ code: 'InvalidServer', field: '--master', message: `--master: ${url}` });
    server = master.replace(/\/$/, '');
    kc.loadFromOptions({
      clusters: kc.clusters.map((c) => (c.name === cluster.name ? { ...c, server } : c)),
      contexts: kc.contexts,
      users: kc.users,
      currentContext: contextName,
    });
  }
  const url = parseServer(server);
  if (typeof url === 'string') return invalid(`${clusterField}.server`, url);
  return {
    ok: true,
    config: {
      server: url,
      source: 'kubeconfig',
      description: `kubeconfig ${file} (context ${contextName}${master !== '' ? `, server from --master ${master}` : ''})`,
      kubeConfig: kc,
      ...rate,
      warnings: [],
    },
  };
}

function loadInCluster(
  inCluster: NonNullable<ClientConnectionOptions['inCluster']>,
  rate: Rate,
): ClientConfigResult {
  const root = inCluster.root ?? SERVICE_ACCOUNT_ROOT;
  const env = inCluster.env ?? process.env;
  const host = env.KUBERNETES_SERVICE_HOST ?? '';
  const port = env.KUBERNETES_SERVICE_PORT ?? '';
  const unavailable = (field: string, message: string, file?: string): ClientConfigResult =>
    failure({ code: 'InClusterUnavailable', field, ...(file ? { file } : {}), message });
  if (host === '' || port === '')
    return unavailable(
      host === '' ? 'KUBERNETES_SERVICE_HOST' : 'KUBERNETES_SERVICE_PORT',
      'neither --kubeconfig nor --master was given, and this is not in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set',
    );
  const tokenFile = join(root, 'token');
  try {
    readFileSync(tokenFile);
  } catch (err) {
    return unavailable(
      'token',
      `in-cluster config: service account token ${tokenFile} cannot be read: ${errorMessage(err)}`,
      tokenFile,
    );
  }
  const caFile = join(root, 'ca.crt');
  const warnings: string[] = [];
  let haveCa = true;
  try {
    accessSync(caFile, constants.R_OK);
  } catch (err) {
    // client-go logs this and carries on with the system's roots; so do we.
    haveCa = false;
    warnings.push(
      `in-cluster config: CA ${caFile} cannot be read (${errorMessage(err)}); using the system's CAs`,
    );
  }
  // rest.InClusterConfig always speaks TLS; the library's http exception for ports 80/8080/8001 is not upstream's.
  const server = `https://${isIPv6(host) ? `[${host}]` : host}:${port}`;
  const url = parseServer(server);
  if (typeof url === 'string') return unavailable('KUBERNETES_SERVICE_HOST', `in-cluster config: ${url}`);
  const kc = new KubeConfig();
  kc.loadFromClusterAndUser(
    { name: 'inCluster', server, skipTLSVerify: false, ...(haveCa ? { caFile } : {}) },
    // A token *file*, re-read by the library every minute: bound service-account tokens rotate.
    { name: 'inClusterUser', authProvider: { name: 'tokenFile', config: { tokenFile } } },
  );
  return {
    ok: true,
    config: {
      server: url,
      source: 'in-cluster',
      description: `in-cluster service account ${root}`,
      kubeConfig: kc,
      ...rate,
      warnings,
    },
  };
}
