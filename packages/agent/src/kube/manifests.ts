// Reads Kubernetes objects from manifest text, as `kubectl apply -f` accepts it: JSON (one object, a List, or
// objects one after another, one a line or not) or multi-document YAML. Used by every command that takes -f (through
// manifest-file.ts) and by tests; objects are sorted by kind, and anything that is not an object with a kind is
// reported rather than thrown.
//
// JSON goes to JSON.parse, not to the YAML parser (YAML is a superset of JSON, but reading an 18 MB List took the
// YAML parser 15 s and JSON.parse 0.26 s). As kubectl decides (YAMLOrJSONDecoder), text whose first character is
// `{` or `[` is JSON. YAML is read one document at a time: by yaml-block.ts when the document is in the plain block
// subset Kubernetes tools write (fast), else by the YAML library.
import { Composer, LineCounter, Parser } from 'yaml';
import type { YAMLError } from 'yaml';
import type { EndpointSlice, Node, Service } from '../api/objects.js';
import { parseBlockYAML } from './yaml-block.js';
import { errorMessage } from '../util/error-message.js';

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
      collector.unreadable(piece.line, `invalid JSON: ${errorMessage(e)}`);
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

function yamlProblem(error: YAMLError, lines: LineCounter, lineOffset: number): string {
  const { line, col } = lines.linePos(error.pos[0]);
  return line > 0 ? `${error.message} (line ${line + lineOffset}, column ${col})` : error.message;
}

/** Reads YAML with the YAML library, one document at a time; `lineOffset` is added to every line it names. */
function readYAMLStream(text: string, collector: Collector, lineOffset = 0): void {
  const lines = new LineCounter();
  const parser = new Parser(lines.addNewLine);
  const composer = new Composer();
  for (const doc of composer.compose(parser.parse(text))) {
    // The document's first line of content (its range starts at a `---` marker, if it has one).
    const line = Math.max(1, lines.linePos(doc.contents?.range[0] ?? doc.range[0]).line) + lineOffset;
    const error = doc.errors[0];
    if (error !== undefined) {
      collector.unreadable(line, yamlProblem(error, lines, lineOffset));
      continue;
    }
    collector.document(doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT }) as unknown, line);
  }
}

interface YAMLDocumentText {
  readonly start: number;
  readonly end: number;
  /** Lines before the document's first. */
  readonly lineOffset: number;
}

/**
 * Where each document is, split at `---` lines; undefined when the stream has what only the library should
 * handle between documents (directives, `...`, content on a `---` line). A `---` at the start of a line always
 * starts a document (it cannot occur inside one), so splitting there is what the library does too.
 */
function yamlDocuments(text: string): YAMLDocumentText[] | undefined {
  const docs: YAMLDocumentText[] = [];
  let start = 0;
  let startLine = 0;
  let line = 0;
  let marked = false;
  let content = false;
  for (let at = 0; at < text.length; line++) {
    let eol = text.indexOf('\n', at);
    if (eol === -1) eol = text.length;
    const c = text.charCodeAt(at);
    if (c === 0x2d /* - */ && text.startsWith('---', at)) {
      const rest = text.slice(at + 3, eol);
      if (rest === '' || /^\s+(#.*)?$/.test(rest)) {
        if (marked || content) docs.push({ start, end: at, lineOffset: startLine });
        start = eol + 1;
        startLine = line + 1;
        marked = true;
        content = false;
        at = eol + 1;
        continue;
      }
      if (/^\s/.test(rest)) return undefined; // content after the marker
    } else if (c === 0x25 /* % */ || (c === 0x2e /* . */ && /^\.\.\.(\s|$)/.test(text.slice(at, eol)))) {
      return undefined;
    }
    if (!content && !/^\s*(#.*)?$/.test(text.slice(at, eol))) content = true;
    at = eol + 1;
  }
  if (marked || content) docs.push({ start, end: text.length, lineOffset: startLine });
  return docs;
}

function readYAML(text: string, collector: Collector): void {
  const docs = yamlDocuments(text);
  if (docs === undefined) {
    readYAMLStream(text, collector);
    return;
  }
  for (const d of docs) {
    const slice = text.slice(d.start, d.end);
    const fast = parseBlockYAML(slice);
    if (fast === undefined) {
      readYAMLStream(slice, collector, d.lineOffset);
      continue;
    }
    collector.document(fast.value, d.lineOffset + firstContentLine(slice));
  }
}

/** The 1-based line of the first line that is neither blank nor a comment (1 if there is none). */
function firstContentLine(text: string): number {
  const m = /^[ \t]*[^\s#]/m.exec(text);
  if (m === null) return 1;
  let n = 1;
  for (let i = text.indexOf('\n'); i !== -1 && i < m.index; i = text.indexOf('\n', i + 1)) n++;
  return n;
}
