// The fast block-YAML reader answers exactly as the YAML library does wherever it answers, and hands everything
// else to the library: checked scalar by scalar, on hand-written documents, on the repository's own manifests, and
// on many random objects written by the library's stringify in several styles.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { parse, parseAllDocuments, stringify } from 'yaml';
import type { ToStringOptions } from 'yaml';
import { readManifests } from '../../packages/agent/src/kube/manifests.js';
import { parseBlockYAML, resolvePlainScalar } from '../../packages/agent/src/kube/yaml-block.js';

/** The library's answer for one document, or undefined when it reports an error. */
function library(text: string): unknown {
  const docs = parseAllDocuments(text);
  assert.ok(Array.isArray(docs) && docs.length <= 1, 'one document');
  const doc = docs[0];
  if (doc === undefined) return null;
  return doc.errors.length > 0 ? undefined : doc.toJS();
}

/** Where the fast reader answers, its answer is the library's; returns whether it answered. */
function agrees(text: string): boolean {
  const fast = parseBlockYAML(text);
  if (fast === undefined) return false;
  assert.deepStrictEqual(fast.value, library(text), `the same value for:\n${text}`);
  return true;
}

describe('parseBlockYAML', () => {
  test('plain scalars resolve as the core schema does', () => {
    const scalars = [
      ...[
        '~',
        'null',
        'Null',
        'NULL',
        'nUll',
        'true',
        'True',
        'TRUE',
        'tRue',
        'false',
        'False',
        'FALSE',
        'yes',
      ],
      ...['no', 'on', 'off', '0', '-0', '+1', '007', '0o17', '0o8', '0x1F', '0xg', '12345678901234567890'],
      ...[
        '1.5',
        '-1.5',
        '.5',
        '1.',
        '+.5',
        '1e3',
        '1E-3',
        '-.5e+2',
        '.inf',
        '-.Inf',
        '+.INF',
        '.nan',
        '.NaN',
      ],
      ...['.NAN', '.Nan', '198.18.0.1', '1:2', 'v1', 'a b', 'a#b', 'x]', 'x,y', '-x', '-1-'],
    ];
    for (const s of scalars) {
      assert.deepStrictEqual(resolvePlainScalar(s), (parse(`k: ${s}`) as { k: unknown }).k, s);
      assert.ok(agrees(`k: ${s}\n`), `k: ${s} is in the subset`);
    }
  });

  test('Kubernetes-style documents are read, and read as the library reads them', () => {
    const accepted = [
      'apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n  namespace: svc\n',
      // Sequences indented, or at their key's own indent (as kubectl writes them).
      'spec:\n  ports:\n  - name: http\n    port: 80\n    targetPort: 8080\n  - port: 81\n',
      'spec:\n  ports:\n    - name: http\n      port: 80\n',
      'endpoints:\n- addresses:\n  - 198.18.10.10\n  conditions:\n    ready: true\n  nodeName: n\n',
      "a: 1 # a comment\n# a comment line\nb: \"two\" # another\nc: 'it''s'\n",
      '"quoted key": 1\n\'single\': 2\nkubernetes.io/service-name: web\n',
      'escapes: "tab\\there \\"q\\" \\\\ \\u00e9 \\x41 \\U0001F600 \\/"\n',
      'empty:\nnull-ish: ~\nmap: {}\nlist: []\nafter: x\n',
      'list:\n- \n- a\n-\n  - nested\n- - compact\n  - nested\n',
      'url: http://example.com:8080/path\ncolon: a:b\nhash: a#b\n',
      '  indented: top\n  level: 2\n',
      'k: v   \n',
      '',
      '# only a comment\n',
    ];
    for (const text of accepted) assert.ok(agrees(text), `in the subset:\n${text}`);
  });

  test('anything outside the subset is left to the library', () => {
    const outside = [
      'a: &anchor 1\nb: *anchor\n',
      'a: !tag x\n',
      'a: |\n  block\n',
      'a: >-\n  folded\n',
      'a: {b: 1}\n',
      'a: [1, 2]\n',
      'a: plain\n  continued\n',
      'a: "two\n  lines"\n',
      'a:\tb\n',
      'a: 1\r\n',
      'a: 1\na: 2\n',
      '? complex\n: key\n',
      'just a scalar\n',
      'a: b: c\n',
      '<<: {a: 1}\n',
      '80: port\n',
      'a: "\\q"\n',
      'a:\n  b: 1\n c: 2\n',
      '- a\nb: 1\n',
    ];
    for (const text of outside) {
      assert.equal(parseBlockYAML(text), undefined, `outside the subset:\n${text}`);
    }
  });

  test("the repository's manifests read the same through readManifests as through the library", () => {
    for (const file of [
      'examples/cluster.yaml',
      'deploy/examples/configmap.yaml',
      'deploy/daemonset.yaml',
      'deploy/rbac.yaml',
      'deploy/serviceaccount.yaml',
    ]) {
      const text = readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8');
      const r = readManifests(text, file);
      const values = parseAllDocuments(text).map((d) => d.toJS() as unknown);
      const flat = values.flatMap((v) => {
        const o = v as { kind?: string; items?: unknown[] } | null;
        return o?.kind?.endsWith('List') && Array.isArray(o.items) ? o.items : [v];
      }) as { kind?: string }[];
      assert.deepStrictEqual(
        r.services,
        flat.filter((o) => o?.kind === 'Service'),
        file,
      );
      assert.deepStrictEqual(
        r.endpointSlices,
        flat.filter((o) => o?.kind === 'EndpointSlice'),
        file,
      );
      assert.deepStrictEqual(
        r.nodes,
        flat.filter((o) => o?.kind === 'Node'),
        file,
      );
      assert.deepEqual(r.problems, [], file);
    }
  });

  test('random objects, written by the library in several styles, read back the same', () => {
    // A small deterministic generator (mulberry32), so a failure names a seed that reproduces it.
    let seed = 0x5eed;
    const random = (): number => {
      seed = (seed + 0x6d2b79f5) | 0;
      let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)] as T;
    const pieces = [
      'a',
      'web',
      '80',
      '1.5',
      'true',
      'null',
      '~',
      ' ',
      ': ',
      ' #',
      '#',
      '-',
      '- ',
      '"',
      "'",
      '\\',
    ];
    const more = [
      '{',
      '}',
      '[',
      ']',
      ',',
      '&',
      '*',
      '!',
      '|',
      '>',
      '%',
      '@',
      '`',
      '?',
      'é',
      '😀',
      '\n',
      'x:y',
    ];
    const word = (): string =>
      Array.from({ length: 1 + Math.floor(random() * 4) }, () => pick([...pieces, ...more])).join('');
    const value = (depth: number): unknown => {
      const r = random();
      if (depth > 3 || r < 0.45) return pick([word(), word(), 0, -7, 3.25, true, false, null, '', 1e21]);
      if (r < 0.75) {
        const o: Record<string, unknown> = {};
        for (let i = 0; i < 1 + Math.floor(random() * 4); i++)
          o[pick([word(), 'name', 'port', 'kind'])] = value(depth + 1);
        return o;
      }
      return Array.from({ length: Math.floor(random() * 4) }, () => value(depth + 1));
    };
    const styles: ToStringOptions[] = [
      {},
      { indentSeq: false },
      { indent: 4 },
      { defaultStringType: 'QUOTE_DOUBLE' },
      { defaultStringType: 'QUOTE_SINGLE', indentSeq: false },
      { defaultKeyType: 'PLAIN', lineWidth: 0 },
    ];
    let answered = 0;
    const runs = 3000;
    for (let n = 0; n < runs; n++) {
      const at = seed;
      const obj = { kind: 'Thing', spec: value(0) };
      const text = stringify(obj, pick(styles));
      try {
        if (agrees(text)) answered++;
      } catch (e) {
        if (e instanceof Error) e.message += `\n(seed ${at})`;
        throw e;
      }
    }
    // Most of them are in the subset: the comparison is not vacuous.
    console.log(`# ${answered} of ${runs} read by the fast reader`);
    assert.ok(answered > runs / 2, `${answered} of ${runs} read by the fast reader`);
  });
});
