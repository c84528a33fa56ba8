// What each kind does on top of the generic verbs: defaults, validation, and bookkeeping after a write.
import type { StatusCause } from './status.js';
import type { JsonObject } from './json.js';

export interface Strategy {
  /** Fills defaults into a fresh copy of a new object (may allocate, e.g. a ClusterIP). */
  prepareForCreate?(obj: JsonObject): void;
  /** Fills defaults into an update, given the stored object. */
  prepareForUpdate?(obj: JsonObject, old: JsonObject): void;
  /** Problems with the object (and with the change from `old`, on update), as field causes. */
  validate(obj: JsonObject, old: JsonObject | undefined): StatusCause[];
  /** Called after a write is stored (obj undefined: deleted) so allocators can follow. */
  committed?(obj: JsonObject | undefined, old: JsonObject | undefined): void;
}
