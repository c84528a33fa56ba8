import assert from 'node:assert/strict';
import { test } from 'node:test';
import { LineSplitter } from '../../packages/agent/src/kube/ndjson.js';
import type { LineItem } from '../../packages/agent/src/kube/ndjson.js';

const lines = (items: LineItem[]) => items.map((i) => (i.kind === 'line' ? i.text : `<overlong ${i.bytes}>`));

test('lines survive any chunking, including a cut inside a multi-byte character', () => {
  const text = '{"a":"héllo ✓"}\n{"b":2}\n\n{"c":"日本"}\n';
  const bytes = Buffer.from(text, 'utf8');
  const expected = ['{"a":"héllo ✓"}', '{"b":2}', '{"c":"日本"}'];
  // Every split point, and one byte at a time.
  for (let cut = 0; cut <= bytes.length; cut++) {
    const s = new LineSplitter(1024);
    const got = [...s.push(bytes.subarray(0, cut)), ...s.push(bytes.subarray(cut)), ...s.end()];
    assert.deepEqual(lines(got), expected, `cut at ${cut}`);
  }
  const s = new LineSplitter(1024);
  const got: LineItem[] = [];
  for (const byte of bytes) got.push(...s.push(Buffer.from([byte])));
  assert.deepEqual(lines([...got, ...s.end()]), expected);
});

test('a last line without a newline is delivered at the end of the stream', () => {
  const s = new LineSplitter(1024);
  assert.deepEqual(lines(s.push(Buffer.from('{"x":1}\n{"y"'))), ['{"x":1}']);
  assert.deepEqual(lines(s.push(Buffer.from(':2}'))), []);
  assert.deepEqual(lines(s.end()), ['{"y":2}']);
});

test('an over-long line is dropped as it streams, reported once with its size, and the next line is intact', () => {
  const s = new LineSplitter(10);
  const out = [
    ...s.push(Buffer.from('short\n0123456')),
    ...s.push(Buffer.from('789abcdef')),
    ...s.push(Buffer.from('XYZ\nok\n')),
  ];
  assert.deepEqual(lines(out), ['short', '<overlong 19>', 'ok']);
  // Nothing of the dropped line is held: the splitter's buffer stays under the limit.
  assert.deepEqual(lines(s.end()), []);
});
