// A live tail of a log group (optionally one stream or a stream prefix): CloudWatch Logs StartLiveTail,
// read as an event stream (sessionStart, then sessionUpdate with sessionResults); once the session has
// started, the recent backlog (FilterLogEvents) is read too, so no line falls between the two, and a
// line in both is shown once.
import { useEffect, useRef, useState } from "preact/hooks";
import { call, callStream, LOGS } from "../lib/api";
import { EventStreamDecoder, payloadJson } from "../lib/eventstream";
import { time } from "../lib/format";
import { getAccount } from "../lib/info";
import { getSession } from "../lib/session";
import { ErrorBox } from "../lib/ui";

interface Line { key: string; timestamp: number; stream: string; message: string }

const MAX_LINES = 1000;

export function groupArn(group: string): string {
  return `arn:aws:logs:${getSession()?.region ?? "us-east-1"}:${getAccount()}:log-group:${group}`;
}

export function LiveTail({ group, stream, streamPrefix, filterPattern, backlogMinutes = 60 }: {
  group: string; stream?: string; streamPrefix?: string; filterPattern?: string; backlogMinutes?: number;
}) {
  const [lines, setLines] = useState<Line[]>([]);
  const [state, setState] = useState("starting");
  const [error, setError] = useState<unknown>(undefined);
  const [paused, setPaused] = useState(false);
  const seen = useRef(new Set<string>());
  const box = useRef<HTMLDivElement>(null);
  // A hidden page ends its tail (it would hold one of the browser's connections to this host);
  // one that comes back from the back/forward cache starts it again.
  const [epoch, setEpoch] = useState(0);
  useEffect(() => {
    const onShow = (e: PageTransitionEvent) => { if (e.persisted) setEpoch((n) => n + 1); };
    addEventListener("pageshow", onShow);
    return () => removeEventListener("pageshow", onShow);
  }, []);

  useEffect(() => {
    if (paused || !getAccount()) return undefined;
    const ctrl = new AbortController();
    const onHide = () => ctrl.abort();
    addEventListener("pagehide", onHide);
    seen.current = new Set();
    setLines([]);
    setError(undefined);
    const add = (events: any[]) => {
      const fresh: Line[] = [];
      for (const e of events) {
        const stream_ = e.logStreamName ?? "";
        const key = `${stream_}|${e.timestamp}|${e.ingestionTime ?? ""}|${e.message}`;
        if (seen.current.has(key)) continue;
        seen.current.add(key);
        fresh.push({ key, timestamp: e.timestamp, stream: stream_, message: e.message ?? "" });
      }
      if (fresh.length) {
        setLines((old) => [...old, ...fresh].sort((a, b) => a.timestamp - b.timestamp).slice(-MAX_LINES));
      }
    };
    const backlog = async () => {
      const input: any = { logGroupName: group, startTime: Date.now() - backlogMinutes * 60000, limit: 1000 };
      if (stream) input.logStreamNames = [stream];
      else if (streamPrefix) input.logStreamNamePrefix = streamPrefix;
      if (filterPattern) input.filterPattern = filterPattern;
      const r = await call(LOGS, "FilterLogEvents", input, ctrl.signal);
      add(r.events ?? []);
    };
    void (async () => {
      let retry = 1000;
      while (!ctrl.signal.aborted) {
        try {
          setState("starting");
          const input: any = { logGroupIdentifiers: [groupArn(group)] };
          if (stream) input.logStreamNames = [stream];
          else if (streamPrefix) input.logStreamNamePrefixes = [streamPrefix];
          if (filterPattern) input.logEventFilterPattern = filterPattern;
          const res = await callStream(LOGS, "StartLiveTail", input, ctrl.signal);
          const reader = res.body!.getReader();
          const dec = new EventStreamDecoder();
          for (;;) {
            const { done, value } = await reader.read();
            if (done) break;
            for (const m of dec.push(value)) {
              const type = m.headers[":event-type"] ?? m.headers[":exception-type"];
              if (m.headers[":message-type"] === "exception") {
                const body = payloadJson(m) as any;
                throw new Error(`${type}: ${body?.message ?? ""}`);
              }
              if (type === "sessionStart") {
                setState("live");
                await backlog();
                retry = 1000;
              } else if (type === "sessionUpdate") {
                add((payloadJson(m) as any).sessionResults ?? []);
              }
            }
          }
        } catch (e) {
          if (ctrl.signal.aborted) return;
          setError(e);
        }
        setState("reconnecting");
        await new Promise((r) => setTimeout(r, retry));
        retry = Math.min(retry * 2, 15000);
      }
    })();
    return () => { ctrl.abort(); removeEventListener("pagehide", onHide); };
  }, [group, stream, streamPrefix, filterPattern, paused, getAccount(), epoch]);

  useEffect(() => {
    const el = box.current;
    if (el) el.scrollTop = el.scrollHeight;
  }, [lines]);

  return (
    <div class="tail">
      <p class="tail-state">
        <span role="status" data-tail-state={state}>
          {!getAccount() ? "Waiting for the account (GetConsoleInfo)…" : paused ? "Paused" : state === "live" ? "Live tail running" : state === "starting" ? "Starting live tail…" : "Reconnecting…"}
        </span>{" "}
        <button type="button" onClick={() => setPaused(!paused)}>{paused ? "Resume" : "Pause"}</button>
      </p>
      <ErrorBox error={error} what="StartLiveTail" />
      <div class="log-lines" ref={box} role="log" aria-label={`Log lines of ${group}`} tabIndex={0}>
        {lines.length ? lines.map((l) => (
          <div class="log-line" key={l.key}>
            <time>{time(l.timestamp)}</time> {!stream ? <span class="log-stream">{l.stream}</span> : null} <span class="log-message">{l.message}</span>
          </div>
        )) : <p class="muted">No lines yet.</p>}
      </div>
    </div>
  );
}
