// Reading a streamed HTTP answer (a watch's JSON lines, an SSE feed's messages) record by record.
import type { Readable } from 'node:stream';

/** Calls `onRecord` with each record of `stream` (UTF-8) that `separator` ends, as soon as it has arrived whole. */
export function onRecords(stream: Readable, separator: string, onRecord: (record: string) => void): void {
  let buf = '';
  stream.on('data', (chunk: Buffer) => {
    buf += chunk.toString('utf8');
    let end: number;
    while ((end = buf.indexOf(separator)) >= 0) {
      const record = buf.slice(0, end);
      buf = buf.slice(end + separator.length);
      onRecord(record);
    }
  });
}
