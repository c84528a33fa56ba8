// Comments are the only free text that reaches nft. knftables writes them with Go's %q; nft's lexer, however, reads
// a quoted string as `"[^"]*"` with no escapes at all, so a `\"` from %q would end the string early and let the
// rest of the comment be parsed as statements. We therefore make the text safe first (double quotes become single
// quotes, control characters become spaces), then Go-quote it, then cut it to nft's 128-byte comment limit
// without splitting an escape or a UTF-8 sequence. For ordinary text the result is exactly knftables' output.

/** nft's COMMENT_MAXLEN (knftables CommentLengthMax): bytes between the quotes, as nft sees them. */
export const COMMENT_LENGTH_MAX = 128;

const PRINTABLE = /^[\p{L}\p{M}\p{N}\p{P}\p{S} ]$/u;

/** One code point as Go's strconv.Quote writes it inside the quotes. */
function goEscape(ch: string): string {
  if (ch === '"' || ch === '\\') return '\\' + ch;
  if (PRINTABLE.test(ch)) return ch;
  switch (ch) {
    case '\x07':
      return '\\a';
    case '\b':
      return '\\b';
    case '\f':
      return '\\f';
    case '\n':
      return '\\n';
    case '\r':
      return '\\r';
    case '\t':
      return '\\t';
    case '\v':
      return '\\v';
  }
  const cp = ch.codePointAt(0) ?? 0xfffd;
  if (cp < 0x20 || cp === 0x7f) return '\\x' + cp.toString(16).padStart(2, '0');
  if (cp > 0xffff) return '\\U' + cp.toString(16).padStart(8, '0');
  return '\\u' + cp.toString(16).padStart(4, '0');
}

/** A lone UTF-16 surrogate (not valid text) becomes U+FFFD, as Go does with invalid UTF-8. */
function wellFormed(ch: string): string {
  return ch.length === 1 && ch >= '\ud800' && ch <= '\udfff' ? '\ufffd' : ch;
}

/** Go's strconv.Quote (what %q prints) for a JavaScript string. */
export function goQuote(text: string): string {
  let out = '"';
  for (const ch of text) out += goEscape(wellFormed(ch));
  return out + '"';
}

/** Replaces what nft cannot hold inside a quoted string: `"` and control characters (including line breaks). */
export function sanitizeComment(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/"/g, "'").replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, ' ');
}

/** The comment as it appears in an nft line: sanitized, Go-quoted, at most 128 bytes inside the quotes. */
export function quoteComment(text: string): string {
  let out = '';
  let bytes = 0;
  for (const ch of sanitizeComment(text)) {
    const piece = goEscape(wellFormed(ch));
    const size = Buffer.byteLength(piece, 'utf8');
    if (bytes + size > COMMENT_LENGTH_MAX) break;
    out += piece;
    bytes += size;
  }
  return '"' + out + '"';
}
