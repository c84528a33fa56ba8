// nft failures as values with context: what kind of failure (classified like knftables' IsNotFound /
// IsAlreadyExists), which operation, which line of the transaction text, and what nft said.
import type { NftOperation } from './objects.js';
import { describeObject } from './objects.js';

export type NftErrorCode =
  /** The transaction was not valid before it reached nft (bad name, verb, or text). */
  | 'Invalid'
  /** ENOENT: the object, or something it references, does not exist. */
  | 'NotFound'
  /** EEXIST: `create` of an existing object, or an element added again with another value. */
  | 'Exists'
  /** EBUSY: deleting something still referenced. */
  | 'Busy'
  /** Anything else (syntax error, nft missing, killed, …). */
  | 'Failed';

export interface NftErrorDetails {
  readonly code: NftErrorCode;
  /** The operation that failed, when known. */
  readonly operation?: NftOperation;
  /**
   * 1-based position of the operation in the transaction (operation index + 1: its line in one-line-per-operation
   * text such as `render`'s), when known. The executor groups elements on one line, so nft's own line and column
   * are in `detail`.
   */
  readonly line?: number;
  /** nft's own message (stderr), for logs. */
  readonly detail?: string;
}

export class NftError extends Error {
  readonly code: NftErrorCode;
  readonly operation?: NftOperation;
  readonly line?: number;
  readonly detail?: string;

  constructor(message: string, details: NftErrorDetails) {
    const where = details.operation
      ? ` (${details.operation.verb} ${describeObject(details.operation.object)}` +
        (details.line !== undefined ? `, line ${details.line}` : '') +
        ')'
      : details.line !== undefined
        ? ` (line ${details.line})`
        : '';
    super(message + where);
    this.name = 'NftError';
    this.code = details.code;
    if (details.operation) this.operation = details.operation;
    if (details.line !== undefined) this.line = details.line;
    if (details.detail !== undefined) this.detail = details.detail;
  }
}

export function isNotFound(e: unknown): boolean {
  return e instanceof NftError && e.code === 'NotFound';
}

export function isExists(e: unknown): boolean {
  return e instanceof NftError && e.code === 'Exists';
}

/** Classifies nft's message the way knftables does (by the errno text nft prints). */
export function classifyNftMessage(message: string): NftErrorCode {
  if (/No such file or directory/.test(message)) return 'NotFound';
  if (/File exists/.test(message)) return 'Exists';
  if (/Device or resource busy/.test(message)) return 'Busy';
  return 'Failed';
}
