// The server side of RFC 6455, as small as kubectl's streaming needs: the opening handshake (with a
// subprotocol chosen from the client's list), frames read (masked, possibly fragmented) and written (unmasked,
// binary), ping answered with pong, and the closing handshake. No extensions (kubectl asks for none).
import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';

const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';
/** A client frame larger than this closes the connection (kubectl sends stdin in 32 KiB pieces). */
const MAX_MESSAGE_BYTES = 16 * 1024 * 1024;

const OP_CONTINUATION = 0x0;
const OP_TEXT = 0x1;
const OP_BINARY = 0x2;
const OP_CLOSE = 0x8;
const OP_PING = 0x9;
const OP_PONG = 0xa;

/** The Sec-WebSocket-Accept value for a client's key (RFC 6455 §4.2.2). */
export function acceptKey(key: string): string {
  return createHash('sha1').update(`${key}${GUID}`).digest('base64');
}

export function isWebSocketUpgrade(req: IncomingMessage): boolean {
  return (req.headers.upgrade ?? '').toLowerCase() === 'websocket';
}

/** The subprotocols a client offers, in its order of preference. */
export function offeredProtocols(req: IncomingMessage): string[] {
  const raw = req.headers['sec-websocket-protocol'];
  const text = Array.isArray(raw) ? raw.join(',') : (raw ?? '');
  return text
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '');
}

/** One frame, encoded as a server sends it (never masked). */
export function encodeFrame(opcode: number, payload: Buffer): Buffer {
  const len = payload.length;
  const head = len < 126 ? Buffer.alloc(2) : len < 65536 ? Buffer.alloc(4) : Buffer.alloc(10);
  head[0] = 0x80 | opcode;
  if (len < 126) head[1] = len;
  else if (len < 65536) {
    head[1] = 126;
    head.writeUInt16BE(len, 2);
  } else {
    head[1] = 127;
    head.writeBigUInt64BE(BigInt(len), 2);
  }
  return Buffer.concat([head, payload]);
}

export interface DecodedFrame {
  readonly fin: boolean;
  readonly opcode: number;
  readonly payload: Buffer;
}

/** Decodes the first frame of `buf`; undefined when more bytes are needed. Client frames must be masked. */
export function decodeFrame(buf: Buffer): { frame: DecodedFrame; rest: Buffer } | undefined | 'invalid' {
  if (buf.length < 2) return undefined;
  const b0 = buf[0] ?? 0;
  const b1 = buf[1] ?? 0;
  if ((b0 & 0x70) !== 0) return 'invalid'; // reserved bits: no extension was negotiated
  const masked = (b1 & 0x80) !== 0;
  if (!masked) return 'invalid';
  let len = b1 & 0x7f;
  let offset = 2;
  if (len === 126) {
    if (buf.length < 4) return undefined;
    len = buf.readUInt16BE(2);
    offset = 4;
  } else if (len === 127) {
    if (buf.length < 10) return undefined;
    const big = buf.readBigUInt64BE(2);
    if (big > BigInt(MAX_MESSAGE_BYTES)) return 'invalid';
    len = Number(big);
    offset = 10;
  }
  if (buf.length < offset + 4 + len) return undefined;
  const mask = buf.subarray(offset, offset + 4);
  const payload = Buffer.from(buf.subarray(offset + 4, offset + 4 + len));
  for (let i = 0; i < payload.length; i++) payload[i] = (payload[i] ?? 0) ^ (mask[i % 4] ?? 0);
  return {
    frame: { fin: (b0 & 0x80) !== 0, opcode: b0 & 0x0f, payload },
    rest: buf.subarray(offset + 4 + len),
  };
}

export interface WebSocketConnection {
  readonly protocol: string;
  /** Sends one binary message. */
  send(data: Buffer): void;
  /** Starts the closing handshake (status 1000 unless given) and ends the socket shortly after. */
  close(code?: number, reason?: string): void;
  onMessage(fn: (data: Buffer) => void): void;
  /** The connection ended, whichever side closed it. */
  onClose(fn: () => void): void;
}

/**
 * Completes the handshake on `socket` with `protocol` (one the client offered) and returns the connection.
 * The caller has checked the request (path, authorization) and chosen the protocol.
 */
export function acceptWebSocket(
  req: IncomingMessage,
  socket: Duplex,
  head: Buffer,
  protocol: string,
): WebSocketConnection {
  const key = String(req.headers['sec-websocket-key'] ?? '');
  socket.write(
    'HTTP/1.1 101 Switching Protocols\r\n' +
      'Upgrade: websocket\r\n' +
      'Connection: Upgrade\r\n' +
      `Sec-WebSocket-Accept: ${acceptKey(key)}\r\n` +
      `Sec-WebSocket-Protocol: ${protocol}\r\n\r\n`,
  );
  const messageListeners: ((data: Buffer) => void)[] = [];
  const closeListeners: (() => void)[] = [];
  let buffered: Buffer = head.length > 0 ? Buffer.from(head) : Buffer.alloc(0);
  let fragments: Buffer[] = [];
  let closed = false;
  let closeSent = false;

  const ended = (): void => {
    if (closed) return;
    closed = true;
    for (const l of closeListeners) l();
  };
  const write = (opcode: number, payload: Buffer): void => {
    if (!socket.writable) return;
    socket.write(encodeFrame(opcode, payload));
  };
  const sendClose = (code: number, reason: string): void => {
    if (closeSent) return;
    closeSent = true;
    const payload = Buffer.alloc(2 + Buffer.byteLength(reason));
    payload.writeUInt16BE(code, 0);
    payload.write(reason, 2);
    write(OP_CLOSE, payload);
    // The client answers with its own close; a client that does not is cut after a moment.
    setTimeout(() => socket.destroy(), 2000).unref();
  };

  const onData = (chunk: Buffer): void => {
    buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
    for (;;) {
      const d = decodeFrame(buffered);
      if (d === undefined) return;
      if (d === 'invalid') {
        sendClose(1002, 'protocol error');
        socket.destroy();
        return;
      }
      buffered = d.rest;
      const { fin, opcode, payload } = d.frame;
      if (opcode === OP_PING) write(OP_PONG, payload);
      else if (opcode === OP_PONG) continue;
      else if (opcode === OP_CLOSE) {
        sendClose(1000, '');
        socket.end();
        ended();
        return;
      } else if (opcode === OP_TEXT || opcode === OP_BINARY || opcode === OP_CONTINUATION) {
        fragments.push(payload);
        if (!fin) continue;
        const message = Buffer.concat(fragments);
        fragments = [];
        for (const l of messageListeners) l(message);
      }
    }
  };
  socket.on('data', onData);
  socket.on('close', ended);
  socket.on('error', () => socket.destroy());
  if (buffered.length > 0) setImmediate(() => onData(Buffer.alloc(0)));

  return {
    protocol,
    send: (data) => write(OP_BINARY, data),
    close: (code = 1000, reason = '') => sendClose(code, reason),
    onMessage: (fn) => void messageListeners.push(fn),
    onClose: (fn) => void closeListeners.push(fn),
  };
}
