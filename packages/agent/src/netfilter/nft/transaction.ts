// A list of operations for one table with a sticky first error (knftables transaction.go): add() always
// "succeeds" so builders stay straight-line code, and whoever runs the transaction reports the first problem.
import { NftError } from './errors.js';
import type { NftObject, NftOperation, NftVerb } from './objects.js';
import { validateOperation } from './validate.js';

export class NftTransaction {
  readonly #ops: NftOperation[] = [];
  #error: NftError | undefined;

  /** Appends `verb object`; an invalid operation is not appended and becomes the sticky error (if first). */
  add(verb: NftVerb, object: NftObject): this {
    const op: NftOperation = { verb, object };
    const problem = validateOperation(op);
    if (problem !== undefined) {
      this.#error ??= new NftError(problem, { code: 'Invalid', operation: op, line: this.#ops.length + 1 });
      return this;
    }
    this.#ops.push(op);
    return this;
  }

  /** Appends operations that were already validated (e.g. cached per service) without re-checking them. */
  addValidated(ops: Iterable<NftOperation>): this {
    for (const op of ops) this.#ops.push(op);
    return this;
  }

  get operations(): readonly NftOperation[] {
    return this.#ops;
  }

  get size(): number {
    return this.#ops.length;
  }

  /** The first validation error, if any; a transaction with an error must not be run. */
  get error(): NftError | undefined {
    return this.#error;
  }
}
