// Reads nft lines written by serialize.ts back into operations (knftables ParseDump): used to load a dump into
// the fake (e.g. a node's state before a restart) and by tests. Only our own line format is understood.
import type { NftChainType, NftHook, NftObject, NftOperation, NftVerb } from './objects.js';
import { NFT_VERBS } from './objects.js';

/** Reverses Go's strconv.Quote for the escapes it writes. */
export function goUnquote(quoted: string): string {
  const inner = quoted.slice(1, -1);
  return inner.replace(/\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|.)/g, (_, esc: string) => {
    switch (esc[0]) {
      case 'x':
      case 'u':
      case 'U':
        return String.fromCodePoint(parseInt(esc.slice(1), 16));
      case 'n':
        return '\n';
      case 't':
        return '\t';
      case 'r':
        return '\r';
      case 'a':
        return '\x07';
      case 'b':
        return '\b';
      case 'f':
        return '\f';
      case 'v':
        return '\v';
      default:
        return esc;
    }
  });
}

const QUOTED = '"(?:[^"\\\\]|\\\\.)*"';
const TRAILING_COMMENT = new RegExp(`^(.*?) comment (${QUOTED})$`);

function bodyFields(body: string): Map<string, string> {
  // "{ type x ; flags a,b ; comment "…" ; }" → fields; comments may hold ";" so they are taken out first.
  const fields = new Map<string, string>();
  let rest = body
    .trim()
    .replace(/^\{\s*/, '')
    .replace(/\s*\}$/, '');
  const comment = new RegExp(`(?:^|;\\s*)comment (${QUOTED})\\s*;?`).exec(rest);
  if (comment && comment[1] !== undefined) {
    fields.set('comment', goUnquote(comment[1]));
    rest = rest.replace(comment[0], ';');
  }
  for (const part of rest.split(';')) {
    const m = /^\s*(\S+)\s+(.*?)\s*$/.exec(part);
    if (m && m[1] !== undefined && m[2] !== undefined) fields.set(m[1], m[2]);
  }
  return fields;
}

/** Parses one line; returns an error string for anything it does not understand. */
export function parseOperationLine(
  line: string,
): { op: NftOperation; family: string; table: string } | string {
  const m = /^(\S+) (table|chain|rule|set|map|element) (\S+) (\S+)(?: (.*))?$/.exec(line.trim());
  if (!m) return `unrecognised line: ${line}`;
  const [, verbText = '', kind, family = '', table = '', restRaw] = m;
  if (!(NFT_VERBS as readonly string[]).includes(verbText)) return `unknown verb ${verbText}`;
  const verb = verbText as NftVerb;
  const rest = restRaw ?? '';
  let object: NftObject;
  switch (kind) {
    case 'table': {
      const comment = rest ? bodyFields(rest).get('comment') : undefined;
      object = { kind: 'table', ...(comment !== undefined ? { comment } : {}) };
      break;
    }
    case 'chain': {
      const cm = /^(\S+)(?: (\{.*\}))?$/.exec(rest);
      if (!cm || cm[1] === undefined) return `bad chain line: ${line}`;
      const f = cm[2] ? bodyFields(cm[2]) : new Map<string, string>();
      const type = f.get('type');
      let base: { type: NftChainType; hook: NftHook; priority: number } | undefined;
      if (type !== undefined) {
        const tm = /^(\S+) hook (\S+)(?: priority (-?\d+))?$/.exec(type);
        const prio = f.get('priority');
        const parsed = tm ? { type: tm[1], hook: tm[2], priority: tm[3] ?? prio } : undefined;
        if (!parsed || parsed.priority === undefined) return `bad chain type in: ${line}`;
        base = {
          type: parsed.type as NftChainType,
          hook: parsed.hook as NftHook,
          priority: Number(parsed.priority),
        };
      }
      const comment = f.get('comment');
      object = {
        kind: 'chain',
        name: cm[1],
        ...(base ? { base } : {}),
        ...(comment !== undefined ? { comment } : {}),
      };
      break;
    }
    case 'rule': {
      const rm = /^(\S+)(?: handle (\d+))?(?: (.*))?$/.exec(rest);
      if (!rm || rm[1] === undefined) return `bad rule line: ${line}`;
      let text = rm[3] ?? '';
      let comment: string | undefined;
      const c = TRAILING_COMMENT.exec(text);
      if (c && c[1] !== undefined && c[2] !== undefined) {
        text = c[1];
        comment = goUnquote(c[2]);
      }
      object = {
        kind: 'rule',
        chain: rm[1],
        rule: text,
        ...(rm[2] !== undefined ? { handle: Number(rm[2]) } : {}),
        ...(comment !== undefined ? { comment } : {}),
      };
      break;
    }
    case 'set':
    case 'map': {
      const sm = /^(\S+)(?: (\{.*\}))?$/.exec(rest);
      if (!sm || sm[1] === undefined) return `bad ${kind} line: ${line}`;
      const f = sm[2] ? bodyFields(sm[2]) : new Map<string, string>();
      const flags = f.get('flags')?.split(',');
      const comment = f.get('comment');
      const timeout = f.get('timeout');
      const typeofText = f.get('typeof');
      const common = {
        name: sm[1],
        ...(kind === 'map' && typeofText !== undefined
          ? { typeof: typeofText }
          : { type: f.get('type') ?? '' }),
        ...(flags ? { flags } : {}),
        ...(comment !== undefined ? { comment } : {}),
      };
      object =
        kind === 'set'
          ? { kind: 'set', ...common, ...(timeout !== undefined ? { timeout: parseInt(timeout, 10) } : {}) }
          : { kind: 'map', ...common };
      break;
    }
    default: {
      const em = new RegExp(`^(\\S+) \\{ (.*?)(?: comment (${QUOTED}))?(?: : (.*?))? \\}$`).exec(rest);
      if (!em || em[1] === undefined || em[2] === undefined) return `bad element line: ${line}`;
      object = {
        kind: 'element',
        set: em[1],
        key: em[2].split(' . '),
        ...(em[4] !== undefined ? { value: em[4].split(' . ') } : {}),
        ...(em[3] !== undefined ? { comment: goUnquote(em[3]) } : {}),
      };
    }
  }
  return { op: { verb, object }, family, table };
}

/**
 * The elements of `{ e1, e2, … }` (without the braces), split at the commas between them: a comment is quoted and
 * may hold a comma; keys and values never do.
 */
function splitElements(list: string): string[] {
  const parts: string[] = [];
  let from = 0;
  let quoted = false;
  for (let i = 0; i < list.length; i++) {
    const c = list[i];
    if (quoted) {
      if (c === '\\') i++;
      else if (c === '"') quoted = false;
    } else if (c === '"') quoted = true;
    else if (c === ',' && list[i + 1] === ' ') {
      parts.push(list.slice(from, i));
      from = i + 2;
    }
  }
  parts.push(list.slice(from));
  return parts;
}

const ELEMENT_STATEMENT = /^(\S+ element \S+ \S+ \S+) \{ (.*) \}$/;

/**
 * A statement of several elements (`add element … SET { e1, e2 }`, as serializeTransaction writes them) as one
 * line per element, each as serializeOperations writes it; any other line as it is.
 */
export function elementLines(line: string): string[] {
  const statement = ELEMENT_STATEMENT.exec(line);
  if (statement === null) return [line];
  const [, head = '', list = ''] = statement;
  return splitElements(list).map((element) => `${head} { ${element} }`);
}

/**
 * Parses a dump or transaction text (blank lines and `#` comments ignored); a statement of several elements gives
 * one operation per element.
 */
export function parseOperations(text: string): { ops: NftOperation[]; errors: string[] } {
  const ops: NftOperation[] = [];
  const errors: string[] = [];
  for (const raw of text.split('\n')) {
    const trimmed = raw.trim();
    if (trimmed === '' || trimmed.startsWith('#')) continue;
    for (const line of elementLines(trimmed)) {
      const r = parseOperationLine(line);
      if (typeof r === 'string') errors.push(r);
      else ops.push(r.op);
    }
  }
  return { ops, errors };
}
