// A kubeconfig file's clusters, users and contexts, read from its parsed YAML the way client-go reads them: named
// entries, `…-data` fields (base64) preferred to the files they stand for, relative file paths taken from the
// kubeconfig's own folder, a token file preferred to a token. What only @kubernetes/client-node applies (exec
// plugins, auth providers, impersonation, proxies) is marked, so that the library is loaded for those alone.
import { isAbsolute, join } from 'node:path';
import type { Credentials, Material } from './request-auth.js';

export interface KubeconfigCluster {
  readonly name: string;
  /** Without a trailing slash. */
  readonly server: string;
  readonly credentials: Pick<Credentials, 'ca' | 'insecureSkipTLSVerify' | 'tlsServerName'>;
  /** A proxy-url: only the library speaks through one. */
  readonly needsLibrary: boolean;
}

export interface KubeconfigUser {
  readonly name: string;
  readonly credentials: Omit<Credentials, 'ca' | 'insecureSkipTLSVerify' | 'tlsServerName'>;
  /** An exec plugin, an auth provider or impersonation: only the library applies them. */
  readonly needsLibrary: boolean;
}

export interface KubeconfigContext {
  readonly cluster: string;
  /** '' when the context names no user (anonymous). */
  readonly user: string;
}

export interface Kubeconfig {
  readonly currentContext: string;
  readonly clusters: ReadonlyMap<string, KubeconfigCluster>;
  readonly users: ReadonlyMap<string, KubeconfigUser>;
  readonly contexts: ReadonlyMap<string, KubeconfigContext>;
}

const LIBRARY_USER_FIELDS = ['exec', 'auth-provider', 'as', 'as-groups', 'as-uid', 'as-user-extra'];

type Fields = Readonly<Record<string, unknown>>;

function isFields(v: unknown): v is Fields {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Thrown inside readKubeconfig for the first bad field; returned as its message. */
class Invalid extends Error {}

function text(fields: Fields, key: string, where: string): string | undefined {
  const v = fields[key];
  if (v === undefined || v === null || v === '') return undefined;
  if (typeof v !== 'string') throw new Invalid(`${where}.${key} is not a string`);
  return v;
}

/** The entries of a list of `{name, <inner>}`, by name (the first of a name wins, as in client-go). */
function named<T>(
  doc: Fields,
  list: string,
  inner: string,
  innerRequired: boolean,
  read: (name: string, fields: Fields, where: string) => T,
): Map<string, T> {
  const out = new Map<string, T>();
  const entries = doc[list];
  if (!Array.isArray(entries)) return out;
  entries.forEach((entry: unknown, i) => {
    const where = `${list}[${i}]`;
    if (!isFields(entry)) throw new Invalid(`${where} is not a mapping`);
    const name = entry.name;
    if (typeof name !== 'string' || name === '') throw new Invalid(`${where}.name is missing`);
    const fields = entry[inner];
    if (fields !== undefined && fields !== null && !isFields(fields))
      throw new Invalid(`${where}.${inner} is not a mapping`);
    if (innerRequired && !isFields(fields)) throw new Invalid(`${where}.${inner} is missing`);
    if (!out.has(name)) out.set(name, read(name, isFields(fields) ? fields : {}, `${where}.${inner}`));
  });
  return out;
}

/**
 * The kubeconfig in `doc` (a parsed YAML mapping), relative paths resolved against `folder`; a string says what is
 * wrong with it ("clusters[0].cluster.server is missing").
 */
export function readKubeconfig(doc: Fields, folder: string): Kubeconfig | string {
  const path = (p: string): string => (isAbsolute(p) ? p : join(folder, p));
  const material = (fields: Fields, key: string, where: string): Material | undefined => {
    const data = text(fields, `${key}-data`, where);
    if (data !== undefined) return { data: Buffer.from(data, 'base64') };
    const file = text(fields, key, where);
    return file === undefined ? undefined : { file: path(file) };
  };
  try {
    const clusters = named(doc, 'clusters', 'cluster', true, (name, c, where): KubeconfigCluster => {
      const server = text(c, 'server', where);
      if (server === undefined) throw new Invalid(`${where}.server is missing`);
      const ca = material(c, 'certificate-authority', where);
      const tlsServerName = text(c, 'tls-server-name', where);
      return {
        name,
        server: server.replace(/\/$/, ''),
        credentials: {
          insecureSkipTLSVerify: c['insecure-skip-tls-verify'] === true,
          ...(ca !== undefined ? { ca } : {}),
          ...(tlsServerName !== undefined ? { tlsServerName } : {}),
        },
        needsLibrary: text(c, 'proxy-url', where) !== undefined,
      };
    });
    const users = named(doc, 'users', 'user', false, (name, u, where): KubeconfigUser => {
      const clientCertificate = material(u, 'client-certificate', where);
      const clientKey = material(u, 'client-key', where);
      const token = text(u, 'token', where);
      const tokenFile = text(u, 'tokenFile', where);
      const username = text(u, 'username', where);
      const password = text(u, 'password', where);
      return {
        name,
        credentials: {
          ...(clientCertificate !== undefined ? { clientCertificate } : {}),
          ...(clientKey !== undefined ? { clientKey } : {}),
          ...(token !== undefined ? { token } : {}),
          ...(tokenFile !== undefined ? { tokenFile: path(tokenFile) } : {}),
          ...(username !== undefined ? { username } : {}),
          ...(password !== undefined ? { password } : {}),
        },
        needsLibrary: LIBRARY_USER_FIELDS.some((k) => u[k] !== undefined && u[k] !== null),
      };
    });
    const contexts = named(doc, 'contexts', 'context', true, (_name, c, where) => ({
      cluster: text(c, 'cluster', where) ?? '',
      user: text(c, 'user', where) ?? '',
    }));
    const currentContext = text(doc, 'current-context', 'kubeconfig') ?? '';
    return { currentContext, clusters, users, contexts };
  } catch (err) {
    if (err instanceof Invalid) return err.message;
    throw err;
  }
}
