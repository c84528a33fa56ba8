// Reads Kubernetes objects from manifest text, as `kubectl apply -f` accepts it: JSON (one object, a List, or
// objects one after another, one a line or not) or multi-document YAML. Used by every command that takes -f (through
// manifest-file.ts) and by tests; objects are sorted by kind, and anything that is not an object with a kind is
// reported rather than thrown.
//
// JSON goes to JSON.parse, not to the YAML parser (YAML is a superset of JSON, but reading an 18 MB List took the
// YAML parser 15 s and JSON.parse 0.26 s). As kubectl decides (YAMLOrJSONDecoder), text whose first character is
// `{` or `[` is JSON. YAML is composed one document at a time, so only one document's syntax tree exists at once.
import { Composer, LineCounter, Parser } from 'yaml';
import type { YAMLError } from 'yaml';
import type { EndpointSlice, Node, Service } from '../api/objects.js';

export interface ManifestObjects {
  readonly services: Service[];
  readonly endpointSlices: EndpointSlice[];
  readonly nodes: Node[];
  /** Objects of other kinds, ignored. */
  readonly ignored: string[];
  /** Documents that could not be read, with where and why. */
  readonly problems: string[];
}

export interface ManifestProgress {
  /** Objects read so far (Services, EndpointSlices, Nodes and ignored kinds; a List's items count one each). */
  readonly objects: number;
  readonly documents: number;
}

export interface ReadManifestsOptions {
  /**
   * Called often while reading (after every document and every PROGRESS_EVERY items of a List), synchronously;
   * the caller decides whether enough time has passed to say something.
   */
  readonly onProgress?: (progress: ManifestProgress) => void;
}

const PROGRESS_EVERY = 1000;
/** Aliases a document may expand (the YAML library's guard against "billion laughs" documents). */
const MAX_ALIAS_COUNT = 100;

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function describe(obj: Record<string, unknown>): string {
  const meta = isRecord(obj.metadata) ? obj.metadata : {};
  const ns = typeof meta.namespace === 'string' ? `${meta.namespace}/` : '';
  const name = typeof meta.name === 'string' ? meta.name : '(no name)';
  return `${String(obj.kind)} ${ns}${name}`;
}

/** Where a problem is, before we know whether the input has one document (named by source alone) or several. */
interface Problem {
  readonly document: number;
  /** 1-based line where the document starts. */
  readonly line: number;
  /** " item 3" for an item of a List (" item 3 item 1" for a List inside a List). */
  readonly items: string;
  readonly text: string;
}

/** Sorts parsed documents into ManifestObjects, counting what it has seen for progress. */
class Collector {
  readonly out: ManifestObjects = { services: [], endpointSlices: [], nodes: [], ignored: [], problems: [] };
  private readonly pending: Problem[] = [];
  private objects = 0;
  documents = 0;

  constructor(private readonly onProgress?: (progress: ManifestProgress) => void) {}

  /** One document (a JSON value or a YAML document), parsed. */
  document(value: unknown, line: number): void {
    this.documents++;
    this.collect(value, line, '');
    this.progress();
  }

  /** One document that could not be parsed. */
  unreadable(line: number, text: string): void {
    this.documents++;
    this.pending.push({ document: this.documents, line, items: '', text });
  }

  /** Text between documents that is no document at all (counts as none). */
  stray(line: number, text: string): void {
    this.pending.push({ document: 0, line, items: '', text });
  }

  private progress(): void {
    this.onProgress?.({ objects: this.objects, documents: this.documents });
  }

  private problem(line: number, items: string, text: string): void {
    this.pending.push({ document: this.documents, line, items, text });
  }

  private collect(value: unknown, line: number, items: string): void {
    if (value === null || value === undefined) return; // an empty document
    if (!isRecord(value)) {
      this.problem(line, items, 'not an object');
      return;
    }
    const kind = value.kind;
    if (typeof kind === 'string' && kind.endsWith('List') && Array.isArray(value.items)) {
      value.items.forEach((item: unknown, j) => {
        this.collect(item, line, `${items} item ${j + 1}`);
        if ((j + 1) % PROGRESS_EVERY === 0) this.progress();
      });
      return;
    }
    if (typeof kind !== 'string') {
      this.problem(line, items, 'object has no kind');
      return;
    }
    if (!isRecord(value.metadata)) {
      this.problem(line, items, `${kind} has no metadata`);
      return;
    }
    this.objects++;
    switch (kind) {
      case 'Service':
        this.out.services.push(value as unknown as Service);
        break;
      case 'EndpointSlice':
        this.out.endpointSlices.push(value as unknown as EndpointSlice);
        break;
      case 'Node':
        this.out.nodes.push(value as unknown as Node);
        break;
      default:
        this.out.ignored.push(describe(value));
    }
  }

  /** The result, each problem named by `source`, and by document and line when there are several documents. */
  finish(source: string): ManifestObjects {
    const several = this.documents > 1;
    for (const p of this.pending) {
      const where =
        p.document === 0
          ? `${source} line ${p.line}`
          : several
            ? `${source} document ${p.document} (line ${p.line})`
            : source;
      this.out.problems.push(`${where}${p.items}: ${p.text}`);
    }
    return this.out;
  }
}

/** Parses manifest text; `source` names it in problems ("file.yaml", "stdin"). Never throws on bad input. */
export function readManifests(
  text: string,
  source: string,
  options: ReadManifestsOptions = {},
): ManifestObjects {
  const collector = new Collector(options.onProgress);
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1); // a byte order mark, as some editors write
  if (looksLikeJSON(text)) readJSON(text, collector);
  else readYAML(text, collector);
  return collector.finish(source);
}

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09 || c === 0xfeff;
}

const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;

function looksLikeJSON(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (!isSpace(c)) return c === OPEN_BRACE || c === OPEN_BRACKET;
  }
  return false;
}

function reason(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

function readJSON(text: string, collector: Collector): void {
  // One value (an object or a List, as `kubectl get -o json` writes it) is by far the most common input.
  let whole: unknown;
  try {
    whole = JSON.parse(text);
  } catch {
    whole = undefined;
  }
  if (whole !== undefined) {
    collector.document(whole, 1);
    return;
  }
  for (const piece of jsonPieces(text)) {
    const chunk = text.slice(piece.start, piece.end);
    if (piece.kind === 'stray') {
      collector.stray(piece.line, `not JSON: ${JSON.stringify(preview(chunk))}`);
      continue;
    }
    let value: unknown;
    try {
      value = JSON.parse(chunk);
    } catch (e) {
      collector.unreadable(piece.line, `invalid JSON: ${reason(e)}`);
      continue;
    }
    collector.document(value, piece.line);
  }
}

function preview(text: string): string {
  const t = text.trim();
  return t.length > 40 ? `${t.slice(0, 40)}…` : t;
}

interface JSONPiece {
  readonly kind: 'value' | 'stray';
  readonly start: number;
  readonly end: number;
  readonly line: number;
}

/**
 * Splits concatenated JSON values (one a line, or pretty-printed one after another) by bracket depth, outside
 * strings. Text between values that is not a value is a 'stray' piece, one per run of such lines; a lone `---`
 * line (a YAML separator between JSON documents) is skipped. An unterminated value runs to the end of the text.
 */
function* jsonPieces(text: string): Generator<JSONPiece> {
  let i = 0;
  let line = 1;
  let strayStart = -1;
  let strayLine = 0;
  const n = text.length;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === 0x0a) line++;
    if (isSpace(c)) {
      i++;
      continue;
    }
    if (c !== OPEN_BRACE && c !== OPEN_BRACKET) {
      const eol = text.indexOf('\n', i);
      const end = eol === -1 ? n : eol;
      if (text.slice(i, end).trimEnd() !== '---' && strayStart === -1) {
        strayStart = i;
        strayLine = line;
      }
      i = end;
      continue;
    }
    if (strayStart !== -1) {
      yield { kind: 'stray', start: strayStart, end: i, line: strayLine };
      strayStart = -1;
    }
    const start = i;
    const startLine = line;
    let depth = 0;
    let inString = false;
    for (; i < n; i++) {
      const d = text.charCodeAt(i);
      if (d === 0x0a) line++;
      if (inString) {
        if (d === 0x5c /* \ */) {
          i++;
          if (text.charCodeAt(i) === 0x0a) line++;
        } else if (d === 0x22 /* " */) inString = false;
      } else if (d === 0x22) inString = true;
      else if (d === OPEN_BRACE || d === OPEN_BRACKET) depth++;
      else if (d === 0x7d /* } */ || d === 0x5d /* ] */) {
        depth--;
        if (depth === 0) {
          i++;
          break;
        }
      }
    }
    yield { kind: 'value', start, end: Math.min(i, n), line: startLine };
  }
  if (strayStart !== -1) yield { kind: 'stray', start: strayStart, end: n, line: strayLine };
}

function yamlProblem(error: YAMLError, lines: LineCounter): string {
  const { line, col } = lines.linePos(error.pos[0]);
  return line > 0 ? `${error.message} (line ${line}, column ${col})` : error.message;
}

function readYAML(text: string, collector: Collector): void {
  const lines = new LineCounter();
  const parser = new Parser(lines.addNewLine);
  const composer = new Composer();
  for (const doc of composer.compose(parser.parse(text))) {
    // The document's first line of content (its range starts at a `---` marker, if it has one).
    const line = Math.max(1, lines.linePos(doc.contents?.range[0] ?? doc.range[0]).line);
    const error = doc.errors[0];
    if (error !== undefined) {
      collector.unreadable(line, yamlProblem(error, lines));
      continue;
    }
    collector.document(doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT }) as unknown, line);
  }
}
