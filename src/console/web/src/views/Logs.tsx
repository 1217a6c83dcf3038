// CloudWatch Logs: log groups (DescribeLogGroups), a group's streams (DescribeLogStreams, latest
// first), a live tail of the group or one stream (LiveTail.tsx) and a filter box (FilterLogEvents
// with filterPattern).
import { useState } from "preact/hooks";
import { call, callAll, LOGS } from "../lib/api";
import { bytes, time } from "../lib/format";
import { useLoad } from "../lib/hooks";
import { href } from "../lib/router";
import { DataTable, ErrorBox, Field, Loading } from "../lib/ui";
import { LiveTail } from "./LiveTail";

export function LogGroups() {
  const { data, error, loading } = useLoad(() => callAll<any>(LOGS, "DescribeLogGroups", {}, "logGroups"), [], ["logs"]);
  return (
    <section>
      <h1>Log groups</h1>
      <ErrorBox error={error} what="DescribeLogGroups" />
      <Loading loading={loading && !data} />
      <DataTable label="Log groups" rows={data} rowKey={(g) => g.logGroupName} empty="No log groups."
        columns={["Log group", "Retention", "Stored", "Created"]}
        cells={(g) => [<a href={href("logs", g.logGroupName)}>{g.logGroupName}</a>,
          g.retentionInDays ? `${g.retentionInDays} days` : "never expires", bytes(g.storedBytes), time(g.creationTime)]} />
    </section>
  );
}

function Filter({ group, stream }: { group: string; stream?: string }) {
  const [pattern, setPattern] = useState("");
  const [result, setResult] = useState<any[] | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  const run = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const input: any = { logGroupName: group, filterPattern: pattern, limit: 500 };
      if (stream) input.logStreamNames = [stream];
      const r = await call(LOGS, "FilterLogEvents", input);
      setResult(r.events ?? []);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="inline-form" onSubmit={run} role="search">
      <Field id="filter-pattern" label="Filter pattern">
        <input id="filter-pattern" value={pattern} placeholder='ERROR or "exact phrase"' onInput={(e) => setPattern(e.currentTarget.value)} />
      </Field>
      <button type="submit" disabled={busy}>Filter</button>
      <ErrorBox error={error} what="FilterLogEvents" />
      {result ? (
        <div class="log-lines" role="log" aria-label="Filtered lines" tabIndex={0}>
          {result.length ? result.map((l) => (
            <div class="log-line" key={l.eventId ?? `${l.logStreamName}${l.timestamp}${l.message}`}>
              <time>{time(l.timestamp)}</time> <span class="log-stream">{l.logStreamName}</span> <span class="log-message">{l.message}</span>
            </div>
          )) : <p class="muted">No matching lines.</p>}
        </div>
      ) : null}
    </form>
  );
}

export function LogGroup({ group, stream }: { group: string; stream?: string }) {
  const streams = useLoad(() => call(LOGS, "DescribeLogStreams", { logGroupName: group, orderBy: "LastEventTime", descending: true, limit: 50 })
    .then((r) => r.logStreams as any[]), [group], ["logs"]);
  return (
    <section>
      <p class="crumbs"><a href={href("logs")}>Log groups</a> /{stream ? <> <a href={href("logs", group)}>{group}</a> /</> : null}</p>
      <h1>{stream ? `Log stream ${stream}` : `Log group ${group}`}</h1>
      <h2>Live tail</h2>
      <LiveTail group={group} stream={stream} backlogMinutes={stream ? 24 * 60 : 10} />
      <h2>Filter</h2>
      <Filter group={group} stream={stream} />
      {!stream ? (
        <>
          <h2>Streams</h2>
          <ErrorBox error={streams.error} what="DescribeLogStreams" />
          <DataTable label="Log streams" rows={streams.data} rowKey={(s) => s.logStreamName} empty="No streams."
            columns={["Stream", "Last event", "Created"]}
            cells={(s) => [<a href={href("logs", group, s.logStreamName)}>{s.logStreamName}</a>,
              time(s.lastEventTimestamp), time(s.creationTime)]} />
        </>
      ) : null}
    </section>
  );
}
