// A list of operations for one table with a sticky first error (knftables transaction.go): add() always
// "succeeds" so builders stay straight-line code, and whoever runs the transaction reports the first problem.
import { NftError } from './errors.js';
import type { NftObject, NftOperation, NftVerb } from './objects.js';
import { validateOperation } from './validate.js';

/**
 * Operations made only as they are written: `count` of them, made anew by each call of make() (the same ones, in
 * the same order). A full sync's refill is over a million element operations; made as an executor writes them,
 * each dies young instead of all of them living until the kernel answered.
 */
export interface OperationStream {
  readonly count: number;
  make(): Iterable<NftOperation>;
}

export class NftTransaction {
  #ops: NftOperation[] = [];
  #stream: OperationStream | undefined;
  #error: NftError | undefined;

  /**
   * A transaction of already validated operations made as they are written: an executor that can writes them from
   * `stream`; for any other, `operations` makes them all once.
   */
  static streamed(stream: OperationStream): NftTransaction {
    const tx = new NftTransaction();
    tx.#stream = stream;
    return tx;
  }

  /** The stream of a streamed() transaction, until operations were made of it or more were added. */
  get stream(): OperationStream | undefined {
    return this.#stream;
  }

  #materialize(): void {
    if (this.#stream === undefined) return;
    this.#ops = [...this.#stream.make()];
    this.#stream = undefined;
  }

  /** Appends `verb object`; an invalid operation is not appended and becomes the sticky error (if first). */
  add(verb: NftVerb, object: NftObject): this {
    this.#materialize();
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
    this.#materialize();
    for (const op of ops) this.#ops.push(op);
    return this;
  }

  get operations(): readonly NftOperation[] {
    this.#materialize();
    return this.#ops;
  }

  get size(): number {
    return this.#stream?.count ?? this.#ops.length;
  }

  /** The first validation error, if any; a transaction with an error must not be run. */
  get error(): NftError | undefined {
    return this.#error;
  }
}
