// How a request to the API server carries this client's credentials: the headers (a bearer token, basic auth) and,
// over https, the agent that holds the TLS material (CA, client certificate and key, skip-verify, server name).
//
// The credentials a node agent is given (a kubeconfig with a token, a token file or a client certificate, or the
// in-cluster service account) are applied here, by our own code. @kubernetes/client-node is loaded only for what it
// alone does: exec credential plugins, auth providers and proxies. Loading it cost every start ≈ 0.55 s and ≈ 75
// MiB of resident memory (its generated API client comes with its KubeConfig), measured on this project's bench
// machine; an agent that authenticates with a file never needs it.
import { readFileSync } from 'node:fs';
import type { OutgoingHttpHeaders } from 'node:http';
import https from 'node:https';

/** What the API client asks of its credentials before each request (the shape of the library's KubeConfig). */
export interface RequestAuth {
  /** Sets `opts.headers` (and `opts.auth` for basic auth), and `opts.agent` for an https server. */
  applyToHTTPSOptions(opts: https.RequestOptions): Promise<void>;
}

/** Bytes given inline (a kubeconfig's `…-data`, base64-decoded) or a file to read them from. */
export type Material = { readonly data: Buffer } | { readonly file: string };

export interface Credentials {
  readonly ca?: Material;
  readonly clientCertificate?: Material;
  readonly clientKey?: Material;
  readonly insecureSkipTLSVerify: boolean;
  readonly tlsServerName?: string;
  readonly token?: string;
  /** Re-read at most once a minute, as client-go does (bound service-account tokens rotate); wins over `token`. */
  readonly tokenFile?: string;
  readonly username?: string;
  readonly password?: string;
}

/** client-go's cachingTokenSource period, and how often certificate files are looked at for a rotation. */
export const REREAD_MS = 60_000;

function readMaterial(m: Material | undefined): Buffer | undefined {
  if (m === undefined) return undefined;
  return 'data' in m ? m.data : readFileSync(m.file);
}

function headersOf(opts: https.RequestOptions): OutgoingHttpHeaders {
  if (opts.headers === undefined || Array.isArray(opts.headers)) opts.headers = {};
  return opts.headers as OutgoingHttpHeaders;
}

/** Credentials from files and inline data, applied by this project's code. */
export class CredentialAuth implements RequestAuth {
  readonly #credentials: Credentials;
  readonly #now: () => number;
  #token: string | undefined;
  #tokenReadAt = -Infinity;
  #agent: https.Agent | undefined;
  #tlsKey = '';
  #tlsReadAt = -Infinity;

  constructor(credentials: Credentials, now: () => number = Date.now) {
    this.#credentials = credentials;
    this.#now = now;
    this.#token = credentials.token;
  }

  applyToHTTPSOptions(opts: https.RequestOptions): Promise<void> {
    const c = this.#credentials;
    const token = this.#bearer();
    if (token !== undefined && token !== '') headersOf(opts).authorization = `Bearer ${token}`;
    else if (c.username !== undefined && c.username !== '') opts.auth = `${c.username}:${c.password ?? ''}`;
    opts.agent = this.#tlsAgent();
    return Promise.resolve();
  }

  /** The token file's content (the last one read, when a re-read fails), else the inline token. */
  #bearer(): string | undefined {
    const file = this.#credentials.tokenFile;
    if (file === undefined || file === '') return this.#token;
    const now = this.#now();
    if (now - this.#tokenReadAt >= REREAD_MS) {
      try {
        this.#token = readFileSync(file, 'utf8').trim();
        this.#tokenReadAt = now;
      } catch {
        // Keep the last token read (none before the first read: the server's 401 tells); try again next time.
      }
    }
    return this.#token;
  }

  /** One agent for as long as the TLS material is the same; a rotated certificate file makes a new one. */
  #tlsAgent(): https.Agent {
    const now = this.#now();
    if (this.#agent !== undefined && now - this.#tlsReadAt < REREAD_MS) return this.#agent;
    const c = this.#credentials;
    const ca = readMaterial(c.ca);
    const cert = readMaterial(c.clientCertificate);
    const key = readMaterial(c.clientKey);
    this.#tlsReadAt = now;
    const material = [ca, cert, key].map((b) => b?.toString('base64') ?? '').join('/');
    if (this.#agent !== undefined && material === this.#tlsKey) return this.#agent;
    this.#agent?.destroy();
    this.#tlsKey = material;
    this.#agent = new https.Agent({
      keepAlive: true,
      ...(ca !== undefined ? { ca } : {}),
      ...(cert !== undefined ? { cert } : {}),
      ...(key !== undefined ? { key } : {}),
      rejectUnauthorized: !c.insecureSkipTLSVerify,
      ...(c.tlsServerName !== undefined && c.tlsServerName !== '' ? { servername: c.tlsServerName } : {}),
    });
    return this.#agent;
  }
}

/** How to build the library's KubeConfig for a kubeconfig that needs it. */
export interface LibraryKubeconfig {
  readonly file: string;
  /** The cluster whose server --master replaces, and that server; undefined: the file's own. */
  readonly serverOverride?: { readonly cluster: string; readonly server: string };
  /** The server speaks plain http (the library builds a TLS agent only when told not to verify). */
  readonly plainHttp: boolean;
}

/**
 * Credentials the library applies (exec plugins, auth providers, proxies): it is imported on the first request,
 * and its KubeConfig, built from the file once, then serves every request.
 */
export class LibraryAuth implements RequestAuth {
  readonly #source: LibraryKubeconfig;
  #loaded: Promise<RequestAuth> | undefined;
  #agent: https.Agent | undefined;

  constructor(source: LibraryKubeconfig) {
    this.#source = source;
  }

  async applyToHTTPSOptions(opts: https.RequestOptions): Promise<void> {
    this.#loaded ??= this.#load();
    await (await this.#loaded).applyToHTTPSOptions(opts);
    // The library builds a new agent on every call, from the same material: the first one is kept, and with it
    // its connections.
    if (opts.agent instanceof https.Agent) {
      this.#agent ??= opts.agent;
      opts.agent = this.#agent;
    }
  }

  async #load(): Promise<RequestAuth> {
    const { KubeConfig } = await import('@kubernetes/client-node');
    const kc = new KubeConfig();
    kc.loadFromFile(this.#source.file);
    const override = this.#source.serverOverride;
    const plain = this.#source.plainHttp;
    if (override === undefined && !plain) return kc;
    // Plain http: the library refuses to build an agent for it unless TLS verification is off (there is no TLS to
    // verify), and upstream clients allow it; the copy is asked for headers only.
    const copy = new KubeConfig();
    copy.loadFromOptions({
      clusters: kc.clusters.map((c) => ({
        ...c,
        ...(override !== undefined && c.name === override.cluster ? { server: override.server } : {}),
        ...(plain ? { skipTLSVerify: true } : {}),
      })),
      contexts: kc.contexts,
      users: kc.users,
      currentContext: kc.currentContext,
    });
    return copy;
  }
}
