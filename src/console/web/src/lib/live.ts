// Live updates: one WatchChanges stream (PaddockConsole) for the whole app. Each `change` event names
// the kinds of resources that changed in the caller's account; views subscribe to the kinds they show
// (useLive in hooks.ts) and refresh, debounced. The stream reconnects with backoff when it ends; a
// reconnect whose first sequence differs from the last one seen refreshes everything (changes may
// have been missed in between).
import { callStream, CONSOLE } from "./api";
import { EventStreamDecoder, payloadJson } from "./eventstream";

export const ALL_KINDS = ["ecs", "logs", "ssm", "servicediscovery", "secretsmanager", "deploy"];

export type LiveState = "connecting" | "live" | "retrying" | "off";

type Listener = (kinds: string[]) => void;
const listeners = new Set<Listener>();
const stateListeners = new Set<(s: LiveState) => void>();
let state: LiveState = "off";
let controller: AbortController | null = null;
let lastSequence: number | undefined;

export function onChange(l: Listener): () => void {
  listeners.add(l);
  return () => listeners.delete(l);
}

export function onLiveState(l: (s: LiveState) => void): () => void {
  stateListeners.add(l);
  return () => stateListeners.delete(l);
}

export function liveState(): LiveState {
  return state;
}

function setState(s: LiveState) {
  state = s;
  document.documentElement.dataset.live = s; // for tests and styling
  for (const l of stateListeners) l(s);
}

function emit(kinds: string[]) {
  for (const l of listeners) l(kinds);
}

async function readOnce(signal: AbortSignal): Promise<void> {
  const res = await callStream(CONSOLE, "WatchChanges", {}, signal);
  if (!res.body) throw new Error("no body");
  const reader = res.body.getReader();
  const decoder = new EventStreamDecoder();
  let first = true;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return;
    for (const m of decoder.push(value)) {
      if (m.headers[":message-type"] === "exception" || m.headers[":message-type"] === "error") return;
      if (m.headers[":event-type"] !== "change") continue;
      const change = payloadJson(m) as { sequence: number; kinds: string[] };
      setState("live");
      if (first) {
        first = false;
        if (lastSequence !== undefined && change.sequence !== lastSequence) emit(ALL_KINDS);
      } else if (change.kinds.length) {
        emit(change.kinds);
      }
      lastSequence = change.sequence;
    }
  }
}

// A stream left open by a page that is gone would keep one of the browser's six connections to this
// host until the server next writes to it: end it when the page is hidden (unload, or a move into the
// back/forward cache), and open it again if the page comes back.
addEventListener("pagehide", () => { if (controller) { stopLive(); resumeOnShow = true; } });
addEventListener("pageshow", () => { if (resumeOnShow) { resumeOnShow = false; startLive(); } });
let resumeOnShow = false;

export function startLive(): void {
  stopLive();
  const c = new AbortController();
  controller = c;
  void (async () => {
    let backoff = 1000;
    while (!c.signal.aborted) {
      setState("connecting");
      const began = Date.now();
      try {
        await readOnce(c.signal);
      } catch { /* reconnect below */ }
      if (c.signal.aborted) break;
      if (Date.now() - began > 20000) backoff = 1000; // it lived a while: start over
      setState("retrying");
      await new Promise((r) => setTimeout(r, backoff));
      backoff = Math.min(backoff * 2, 15000);
    }
  })();
}

export function stopLive(): void {
  controller?.abort();
  controller = null;
  lastSequence = undefined;
  setState("off");
}
