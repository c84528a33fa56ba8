// Errors as Kubernetes Status objects (metav1.Status): every failed request answers with one, with the HTTP code,
// the reason clients switch on (NotFound, AlreadyExists, Conflict, Invalid, …) and, for Invalid, field causes.

export type StatusReason =
  | 'BadRequest'
  | 'Unauthorized'
  | 'NotFound'
  | 'MethodNotAllowed'
  | 'AlreadyExists'
  | 'Conflict'
  | 'Gone'
  | 'Expired'
  | 'Invalid'
  | 'RequestEntityTooLarge'
  | 'UnsupportedMediaType'
  | 'NotAcceptable'
  | 'InternalError';

export interface StatusCause {
  readonly reason: string;
  readonly message: string;
  readonly field: string;
}

export interface ApiError {
  readonly code: number;
  readonly reason: StatusReason;
  readonly message: string;
  readonly details?: {
    readonly name?: string;
    readonly group?: string;
    readonly kind?: string;
    readonly causes?: readonly StatusCause[];
  };
}

export type Result<T> =
  { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: ApiError };

export const ok = <T>(value: T): Result<T> => ({ ok: true, value });
export const fail = <T>(error: ApiError): Result<T> => ({ ok: false, error });

export interface StatusObject {
  readonly kind: 'Status';
  readonly apiVersion: 'v1';
  readonly metadata: Record<string, never>;
  readonly status: 'Failure' | 'Success';
  readonly message?: string;
  readonly reason?: StatusReason;
  readonly details?: ApiError['details'];
  readonly code: number;
}

export function statusObject(err: ApiError): StatusObject {
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: err.message,
    reason: err.reason,
    ...(err.details ? { details: err.details } : {}),
    code: err.code,
  };
}

const qualified = (group: string, resource: string): string => (group ? `${resource}.${group}` : resource);

export const errors = {
  badRequest: (message: string): ApiError => ({ code: 400, reason: 'BadRequest', message }),
  unauthorized: (): ApiError => ({ code: 401, reason: 'Unauthorized', message: 'Unauthorized' }),
  notFound: (group: string, resource: string, name: string): ApiError => ({
    code: 404,
    reason: 'NotFound',
    message: `${qualified(group, resource)} "${name}" not found`,
    details: { name, ...(group ? { group } : {}), kind: resource },
  }),
  noRoute: (): ApiError => ({
    code: 404,
    reason: 'NotFound',
    message: 'the server could not find the requested resource',
    details: {},
  }),
  methodNotAllowed: (method: string, what: string): ApiError => ({
    code: 405,
    reason: 'MethodNotAllowed',
    message: `${method} is not supported on ${what}`,
  }),
  alreadyExists: (group: string, resource: string, name: string): ApiError => ({
    code: 409,
    reason: 'AlreadyExists',
    message: `${qualified(group, resource)} "${name}" already exists`,
    details: { name, ...(group ? { group } : {}), kind: resource },
  }),
  conflict: (group: string, resource: string, name: string, why: string): ApiError => ({
    code: 409,
    reason: 'Conflict',
    message: `Operation cannot be fulfilled on ${qualified(group, resource)} "${name}": ${why}`,
    details: { name, ...(group ? { group } : {}), kind: resource },
  }),
  gone: (message: string): ApiError => ({ code: 410, reason: 'Expired', message }),
  invalid: (group: string, kind: string, name: string, causes: readonly StatusCause[]): ApiError => ({
    code: 422,
    reason: 'Invalid',
    message: `${kind}${group ? `.${group}` : ''} "${name}" is invalid: ${causes
      .map((c) => `${c.field}: ${c.message}`)
      .join(', ')}`,
    details: { name, ...(group ? { group } : {}), kind, causes },
  }),
  tooLarge: (limit: number): ApiError => ({
    code: 413,
    reason: 'RequestEntityTooLarge',
    message: `the request body is larger than the limit of ${limit} bytes`,
  }),
  unsupportedMediaType: (type: string): ApiError => ({
    code: 415,
    reason: 'UnsupportedMediaType',
    message: `the body of the request was in an unknown format - accepted media types include: application/json, application/yaml (got "${type}")`,
  }),
  internal: (message: string): ApiError => ({ code: 500, reason: 'InternalError', message }),
};

/** One field cause of an Invalid error; `reason` uses upstream's FieldValue* names. */
export function cause(
  field: string,
  message: string,
  reason:
    | 'FieldValueInvalid'
    | 'FieldValueRequired'
    | 'FieldValueDuplicate'
    | 'FieldValueNotSupported'
    | 'FieldValueForbidden' = 'FieldValueInvalid',
): StatusCause {
  return { reason, message, field };
}
