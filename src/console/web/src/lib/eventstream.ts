// A decoder for AWS's event stream framing (application/vnd.amazon.eventstream), as CloudWatch Logs'
// StartLiveTail and PaddockConsole's WatchChanges answer:
//   prelude: total length u32 BE, headers length u32 BE, prelude CRC32
//   headers: name length u8, name, type u8, value (7 = string: u16 BE length + bytes)
//   payload, then the message's CRC32 (over everything before it).
// Feed it the body's chunks as they arrive; it returns each whole message once. A frame whose CRC
// does not match throws: the stream is corrupt and the caller reconnects.

export interface EventMessage {
  headers: Record<string, string>;
  payload: Uint8Array;
}

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

export function crc32(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (let i = 0; i < bytes.length; i++) c = CRC_TABLE[(c ^ bytes[i]!) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

const decoder = new TextDecoder();

function parseHeaders(bytes: Uint8Array): Record<string, string> {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out: Record<string, string> = {};
  let i = 0;
  while (i < bytes.length) {
    const nameLen = bytes[i]!;
    const name = decoder.decode(bytes.subarray(i + 1, i + 1 + nameLen));
    i += 1 + nameLen;
    const type = bytes[i]!;
    i += 1;
    switch (type) {
      case 0: case 1: break; // bool true / false
      case 2: i += 1; break; // byte
      case 3: i += 2; break; // short
      case 4: i += 4; break; // integer
      case 5: case 8: i += 8; break; // long, timestamp
      case 6: i += 2 + view.getUint16(i); break; // byte array
      case 7: {
        const len = view.getUint16(i);
        out[name] = decoder.decode(bytes.subarray(i + 2, i + 2 + len));
        i += 2 + len;
        break;
      }
      case 9: i += 16; break; // uuid
      default: throw new Error(`event stream: unknown header type ${type}`);
    }
  }
  return out;
}

export class EventStreamDecoder {
  private buffer = new Uint8Array(0);

  push(chunk: Uint8Array): EventMessage[] {
    const joined = new Uint8Array(this.buffer.length + chunk.length);
    joined.set(this.buffer);
    joined.set(chunk, this.buffer.length);
    const messages: EventMessage[] = [];
    let at = 0;
    while (joined.length - at >= 12) {
      const view = new DataView(joined.buffer, joined.byteOffset + at);
      const total = view.getUint32(0);
      const headersLen = view.getUint32(4);
      if (total < 16 || headersLen > total - 16) throw new Error("event stream: bad prelude");
      if (crc32(joined.subarray(at, at + 8)) !== view.getUint32(8)) {
        throw new Error("event stream: prelude CRC mismatch");
      }
      if (joined.length - at < total) break;
      const frame = joined.subarray(at, at + total);
      if (crc32(frame.subarray(0, total - 4)) !== view.getUint32(total - 4)) {
        throw new Error("event stream: message CRC mismatch");
      }
      messages.push({
        headers: parseHeaders(frame.subarray(12, 12 + headersLen)),
        payload: frame.slice(12 + headersLen, total - 4),
      });
      at += total;
    }
    this.buffer = joined.slice(at);
    return messages;
  }
}

export function payloadJson(m: EventMessage): unknown {
  return JSON.parse(decoder.decode(m.payload));
}
