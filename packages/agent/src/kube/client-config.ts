// Where the API server is and how to authenticate to it, decided the way upstream kube-proxy decides
// (cmd/kube-proxy/app/server.go createClient): neither --kubeconfig nor --master → in-cluster service account;
// otherwise the kubeconfig file (only the explicit path: $KUBECONFIG is not read), with --master replacing the
// server. The kubeconfig is read here; its credentials are applied by request-auth.ts (tokens, token files, basic
// auth, client certificates, CA, insecure-skip-tls-verify), or by @kubernetes/client-node, loaded only when the
// user needs what only it does (exec plugins, auth providers, impersonation, proxies). Requests are our own
// (api-client.ts).
import { accessSync, constants, readFileSync, statSync } from 'node:fs';
import { isIPv6 } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { errorMessage } from '../util/error-message.js';
import { readKubeconfig } from './kubeconfig-file.js';
import type { KubeconfigUser } from './kubeconfig-file.js';
import { CredentialAuth, LibraryAuth } from './request-auth.js';
import type { Material, RequestAuth } from './request-auth.js';

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
  /** The credentials every request carries. */
  readonly auth: RequestAuth;
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
  return {
    ok: true,
    config: {
      server: url,
      source: 'master',
      description: `--master ${master}`,
      auth: new CredentialAuth({ insecureSkipTLSVerify: false }),
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
  let doc: unknown;
  try {
    doc = parseYaml(text);
  } catch (err) {
    return refuse('KubeconfigInvalid', `is not valid YAML: ${errorMessage(err)}`);
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc))
    return refuse('KubeconfigInvalid', 'is empty or not a YAML mapping');

  const parsed = readKubeconfig(doc as Readonly<Record<string, unknown>>, dirname(resolve(file)));
  // Names the entry ("clusters[0].cluster.server is missing").
  if (typeof parsed === 'string')
    return failure({ code: 'KubeconfigInvalid', file, message: `kubeconfig ${file}: ${parsed}` });
  const invalid = (field: string, what: string): ClientConfigResult =>
    failure({ code: 'KubeconfigInvalid', file, field, message: `kubeconfig ${file}: ${field} ${what}` });

  const contextName = parsed.currentContext;
  if (!contextName) return invalid('current-context', 'is not set');
  const context = parsed.contexts.get(contextName);
  if (!context)
    return invalid('current-context', `names ${JSON.stringify(contextName)}, which is not in contexts`);
  const ctxField = `contexts[name=${contextName}].context`;
  const cluster = parsed.clusters.get(context.cluster);
  if (!cluster)
    return invalid(
      `${ctxField}.cluster`,
      `names ${JSON.stringify(context.cluster)}, which is not in clusters`,
    );
  let user: KubeconfigUser | undefined;
  if (context.user !== '') {
    user = parsed.users.get(context.user);
    if (!user)
      return invalid(`${ctxField}.user`, `names ${JSON.stringify(context.user)}, which is not in users`);
  }
  const clusterField = `clusters[name=${cluster.name}].cluster`;
  const userField = `users[name=${user?.name ?? ''}].user`;
  // Referenced files are read when requests are made; a missing one should fail here, by name.
  const files: [string, Material | undefined][] = [
    [`${clusterField}.certificate-authority`, cluster.credentials.ca],
    [`${userField}.client-certificate`, user?.credentials.clientCertificate],
    [`${userField}.client-key`, user?.credentials.clientKey],
    [
      `${userField}.tokenFile`,
      user?.credentials.tokenFile === undefined ? undefined : { file: user.credentials.tokenFile },
    ],
  ];
  for (const [field, material] of files) {
    if (material === undefined || !('file' in material)) continue;
    try {
      accessSync(material.file, constants.R_OK);
    } catch (err) {
      return invalid(field, `names ${material.file}, which cannot be read: ${errorMessage(err)}`);
    }
  }

  let server = cluster.server;
  if (master !== '') {
    const url = parseServer(master);
    if (typeof url === 'string')
      return failure({ code: 'InvalidServer', field: '--master', message: `--master: ${url}` });
    server = master.replace(/\/$/, '');
  }
  const url = parseServer(server);
  if (typeof url === 'string') return invalid(`${clusterField}.server`, url);
  const auth: RequestAuth =
    cluster.needsLibrary || user?.needsLibrary === true
      ? new LibraryAuth({
          file,
          ...(master !== '' ? { serverOverride: { cluster: cluster.name, server } } : {}),
          plainHttp: url.protocol === 'http:',
        })
      : new CredentialAuth({ ...cluster.credentials, ...user?.credentials });
  return {
    ok: true,
    config: {
      server: url,
      source: 'kubeconfig',
      description: `kubeconfig ${file} (context ${contextName}${master !== '' ? `, server from --master ${master}` : ''})`,
      auth,
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
  // A token *file*, re-read every minute: bound service-account tokens rotate.
  const auth = new CredentialAuth({
    insecureSkipTLSVerify: false,
    tokenFile,
    ...(haveCa ? { ca: { file: caFile } } : {}),
  });
  return {
    ok: true,
    config: {
      server: url,
      source: 'in-cluster',
      description: `in-cluster service account ${root}`,
      auth,
      ...rate,
      warnings,
    },
  };
}
