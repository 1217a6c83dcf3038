// The console's API client: every call is a same-origin POST / signed with SigV4 (sigv4.ts) with the
// signed-in session (session.ts). JSON 1.1 services take an X-Amz-Target; Query services (STS, EC2)
// a form body and answer XML. A refused call throws ApiError with the API's code and message, which
// every view shows as they are.
import { getSession, setSession, type Session } from "./session";
import { signRequest, type Credentials } from "./sigv4";

export interface JsonService {
  prefix: string;
  signingName: string;
}

export const ECS: JsonService = { prefix: "AmazonEC2ContainerServiceV20141113", signingName: "ecs" };
export const LOGS: JsonService = { prefix: "Logs_20140328", signingName: "logs" };
export const SSM: JsonService = { prefix: "AmazonSSM", signingName: "ssm" };
export const CLOUDMAP: JsonService = { prefix: "Route53AutoNaming_v20170314", signingName: "servicediscovery" };
export const CONSOLE: JsonService = { prefix: "PaddockConsole_20261204", signingName: "paddock" };

export class ApiError extends Error {
  constructor(readonly code: string, message: string, readonly status: number) {
    super(message);
  }
  override toString(): string {
    return this.message ? `${this.code}: ${this.message}` : this.code;
  }
}

const EXPIRED = new Set(["ExpiredTokenException", "ExpiredToken", "RequestExpired"]);

function requireSession(): Session {
  const s = getSession();
  if (!s) throw new ApiError("NotSignedIn", "Sign in first.", 0);
  return s;
}

/** A signed fetch of POST /; `creds` default to the session's. */
export async function signedPost(signingName: string, headers: Record<string, string>, body: string,
                                 opts: { creds?: Credentials; region?: string; signal?: AbortSignal } = {})
  : Promise<Response> {
  const session = opts.creds ? null : requireSession();
  const creds = opts.creds ?? session!;
  const region = opts.region ?? session!.region;
  const signed = signRequest({ method: "POST", host: location.host, path: "/", headers, body },
    creds, region, signingName, new Date());
  try {
    return await fetch("/", { method: "POST", headers: signed, body, signal: opts.signal,
      credentials: "omit", cache: "no-store" });
  } catch (e) {
    if (e instanceof DOMException && e.name === "AbortError") throw e;
    throw new ApiError("NetworkError", `The server could not be reached (${String(e)}).`, 0);
  }
}

function jsonError(status: number, text: string): ApiError {
  let code = `HTTP${status}`;
  let message = text.slice(0, 500);
  try {
    const body = JSON.parse(text) as Record<string, unknown>;
    const type = String(body.__type ?? body.code ?? code);
    code = type.includes("#") ? type.slice(type.lastIndexOf("#") + 1) : type;
    message = String(body.message ?? body.Message ?? "");
  } catch { /* not JSON: keep the text */ }
  return new ApiError(code, message, status);
}

/** Calls `service`'s `action` with `input`; its JSON answer, or ApiError. */
export async function call<T = any>(service: JsonService, action: string, input: object = {},
                                    signal?: AbortSignal): Promise<T> {
  const body = JSON.stringify(input);
  const res = await signedPost(service.signingName, {
    "content-type": "application/x-amz-json-1.1",
    "x-amz-target": `${service.prefix}.${action}`,
  }, body, { signal });
  const text = await res.text();
  if (!res.ok) {
    const err = jsonError(res.status, text);
    if (EXPIRED.has(err.code)) setSession(null);
    throw err;
  }
  return (text ? JSON.parse(text) : {}) as T;
}

/** A JSON 1.1 call whose answer streams (WatchChanges, StartLiveTail): the Response, checked. */
export async function callStream(service: JsonService, action: string, input: object,
                                 signal: AbortSignal): Promise<Response> {
  const res = await signedPost(service.signingName, {
    "content-type": "application/x-amz-json-1.1",
    "x-amz-target": `${service.prefix}.${action}`,
  }, JSON.stringify(input), { signal });
  if (!res.ok) {
    const err = jsonError(res.status, await res.text());
    if (EXPIRED.has(err.code)) setSession(null);
    throw err;
  }
  return res;
}

function xmlError(status: number, text: string): ApiError {
  const doc = new DOMParser().parseFromString(text, "application/xml");
  const code = doc.getElementsByTagName("Code")[0]?.textContent ?? `HTTP${status}`;
  const message = doc.getElementsByTagName("Message")[0]?.textContent ?? text.slice(0, 500);
  return new ApiError(code, message, status);
}

/** A Query-protocol call (STS, EC2): form body in, parsed XML out. */
export async function callQuery(signingName: string, params: Record<string, string>,
                                opts: { creds?: Credentials; region?: string } = {}): Promise<Document> {
  const body = Object.entries(params)
    .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join("&");
  const res = await signedPost(signingName,
    { "content-type": "application/x-www-form-urlencoded; charset=utf-8" }, body, opts);
  const text = await res.text();
  if (!res.ok) {
    const err = xmlError(res.status, text);
    if (!opts.creds && EXPIRED.has(err.code)) setSession(null);
    throw err;
  }
  return new DOMParser().parseFromString(text, "application/xml");
}

/** The text of the first element named `tag` under `node` ("" when none). */
export function xmlText(node: Document | Element, tag: string): string {
  return node.getElementsByTagName(tag)[0]?.textContent ?? "";
}

/** Every page of a paged JSON call: `key`'s items concatenated (`token` is how the service spells
 * its page token: ECS and Logs nextToken, SSM and Cloud Map NextToken). */
export async function callAll<T>(service: JsonService, action: string, input: object, key: string,
                                 token: "nextToken" | "NextToken" = "nextToken", max = 10000): Promise<T[]> {
  const out: T[] = [];
  let next: string | undefined;
  do {
    const page: any = await call(service, action, next ? { ...input, [token]: next } : input);
    out.push(...((page[key] ?? []) as T[]));
    next = page[token];
  } while (next && out.length < max);
  return out;
}
