// Splits a watch stream into lines. The API server writes one JSON object per line, but TCP may cut the stream
// anywhere (inside a line, inside a multi-byte character), so bytes are kept until a newline arrives. A line
// longer than maxLineBytes is dropped as it streams (never buffered whole) and reported once.

export type LineItem =
  { readonly kind: 'line'; readonly text: string } | { readonly kind: 'overlong'; readonly bytes: number };

const NEWLINE = 0x0a;

export class LineSplitter {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  /** Bytes of an over-long line dropped so far; -1 when not dropping. */
  private droppedBytes = -1;

  constructor(private readonly maxLineBytes: number) {}

  /** Feeds one chunk; returns the complete lines (and over-long reports) it finished. */
  push(chunk: Buffer): LineItem[] {
    const out: LineItem[] = [];
    let start = 0;
    while (start < chunk.length) {
      const nl = chunk.indexOf(NEWLINE, start);
      const end = nl === -1 ? chunk.length : nl;
      this.take(chunk.subarray(start, end));
      if (nl === -1) break;
      this.finishLine(out);
      start = nl + 1;
    }
    return out;
  }

  /** Ends the stream: a last line without a newline still counts (a clean close may omit it). */
  end(): LineItem[] {
    const out: LineItem[] = [];
    if (this.pendingBytes > 0 || this.droppedBytes >= 0) this.finishLine(out);
    return out;
  }

  private take(part: Buffer): void {
    if (part.length === 0) return;
    if (this.droppedBytes >= 0) {
      this.droppedBytes += part.length;
      return;
    }
    if (this.pendingBytes + part.length > this.maxLineBytes) {
      this.droppedBytes = this.pendingBytes + part.length;
      this.pending = [];
      this.pendingBytes = 0;
      return;
    }
    // Copy: the caller's chunk buffer may be reused by the stream.
    this.pending.push(Buffer.from(part));
    this.pendingBytes += part.length;
  }

  private finishLine(out: LineItem[]): void {
    if (this.droppedBytes >= 0) {
      out.push({ kind: 'overlong', bytes: this.droppedBytes });
      this.droppedBytes = -1;
      return;
    }
    const text = Buffer.concat(this.pending, this.pendingBytes).toString('utf8');
    this.pending = [];
    this.pendingBytes = 0;
    if (text.trim() !== '') out.push({ kind: 'line', text });
  }
}
