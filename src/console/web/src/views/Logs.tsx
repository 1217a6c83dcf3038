// CloudWatch Logs: log groups (DescribeLogGroups), a group's streams (DescribeLogStreams, latest
// first), a live tail of the group or one stream (LiveTail.tsx) and a filter box (FilterLogEvents
// with filterPattern).
import { useState } from "preact/hooks";
import { call, callAll, LOGS } from "../lib/api";
import { bytes, time } from "../lib/format";
import { useLoad } from "../lib/hooks";
import { href } from "../lib/router";
import { Empty, ErrorBox, Field, Loading, TableWrap } from "../lib/ui";
import { LiveTail } from "./LiveTail";

export function LogGroups() {
  const { data, error, loading } = useLoad(() => callAll<any>(LOGS, "DescribeLogGroups", {}, "logGroups"), [], ["logs"]);
  return (
    <section>
      <h1>Log groups</h1>
      <ErrorBox error={error} what="DescribeLogGroups" />
      <Loading loading={loading && !data} />
      {data && !data.length ? <Empty>No log groups.</Empty> : null}
      {data?.length ? (
        <TableWrap label="Log groups">
          <table>
            <thead><tr><th scope="col">Log group</th><th scope="col">Retention</th><th scope="col">Stored</th><th scope="col">Created</th></tr></thead>
            <tbody>
              {data.map((g) => (
                <tr key={g.logGroupName}>
                  <th scope="row"><a href={href("logs", g.logGroupName)}>{g.logGroupName}</a></th>
                  <td>{g.retentionInDays ? `${g.retentionInDays} days` : "never expires"}</td>
                  <td>{bytes(g.storedBytes)}</td>
                  <td>{time(g.creationTime)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      ) : null}
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
          {streams.data && !streams.data.length ? <Empty>No streams.</Empty> : null}
          {streams.data?.length ? (
            <TableWrap label="Log streams">
              <table>
                <thead><tr><th scope="col">Stream</th><th scope="col">Last event</th><th scope="col">Created</th></tr></thead>
                <tbody>
                  {streams.data.map((s) => (
                    <tr key={s.logStreamName}>
                      <th scope="row"><a href={href("logs", group, s.logStreamName)}>{s.logStreamName}</a></th>
                      <td>{time(s.lastEventTimestamp)}</td>
                      <td>{time(s.creationTime)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </TableWrap>
          ) : null}
        </>
      ) : null}
    </section>
  );
}
