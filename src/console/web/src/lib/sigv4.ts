// AWS Signature Version 4 in the browser, with @noble/hashes rather than WebCrypto: a console opened
// over plain HTTP at a non-loopback address is not a secure context and has no crypto.subtle.
//
//   const headers = signRequest({method: "POST", host: location.host, path: "/", body,
//     headers: {"content-type": "application/x-amz-json-1.1", "x-amz-target": "…"}},
//     creds, "ecs", new Date());
//   fetch("/", {method: "POST", headers, body});
//
// Signed: host, x-amz-date, x-amz-security-token (when the credentials carry one) and every header
// passed in (content-type, x-amz-target); the payload hash covers the body.
import { hmac } from "@noble/hashes/hmac.js";
import { sha256 } from "@noble/hashes/sha2.js";
import { bytesToHex, utf8ToBytes } from "@noble/hashes/utils.js";

export interface Credentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

export interface UnsignedRequest {
  method: string;
  host: string;
  path: string; // already URI-encoded, e.g. "/"
  query?: string; // already canonical (sorted, encoded), "" when none
  headers: Record<string, string>; // lower-case names
  body: string;
}

/** 20150830T123600Z */
export function amzDate(when: Date): string {
  return when.toISOString().replace(/[-:]/g, "").replace(/\.\d{3}/, "");
}

function hmacBytes(key: Uint8Array, text: string): Uint8Array {
  return hmac(sha256, key, utf8ToBytes(text));
}

export function hexSha256(text: string): string {
  return bytesToHex(sha256(utf8ToBytes(text)));
}

/** The headers to send: the request's own plus x-amz-date, x-amz-security-token and authorization. */
export function signRequest(req: UnsignedRequest, creds: Credentials, region: string, service: string,
                            when: Date): Record<string, string> {
  const date = amzDate(when);
  const day = date.slice(0, 8);
  const headers: Record<string, string> = { ...req.headers, host: req.host, "x-amz-date": date };
  if (creds.sessionToken) headers["x-amz-security-token"] = creds.sessionToken;
  const names = Object.keys(headers).map((n) => n.toLowerCase()).sort();
  const lower: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) lower[k.toLowerCase()] = v.trim().replace(/\s+/g, " ");
  const canonicalHeaders = names.map((n) => `${n}:${lower[n]}\n`).join("");
  const signedHeaders = names.join(";");
  const canonical = [req.method, req.path, req.query ?? "", canonicalHeaders, signedHeaders,
    hexSha256(req.body)].join("\n");
  const scope = `${day}/${region}/${service}/aws4_request`;
  const toSign = ["AWS4-HMAC-SHA256", date, scope, hexSha256(canonical)].join("\n");
  let key = hmacBytes(utf8ToBytes("AWS4" + creds.secretAccessKey), day);
  key = hmacBytes(key, region);
  key = hmacBytes(key, service);
  key = hmacBytes(key, "aws4_request");
  const signature = bytesToHex(hmacBytes(key, toSign));
  const out: Record<string, string> = { ...headers };
  delete out.host; // the browser sends Host itself and refuses to be told
  out.authorization = `AWS4-HMAC-SHA256 Credential=${creds.accessKeyId}/${scope}, ` +
    `SignedHeaders=${signedHeaders}, Signature=${signature}`;
  return out;
}
