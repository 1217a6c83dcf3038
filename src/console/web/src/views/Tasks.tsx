// A cluster's tasks: ListTasks 100 a page, each page described (DescribeTasks, 100 a call) as soon as
// it is listed, concurrently; the first page's rows render as soon as they are described. The table
// shows 100 rows a page with a filter box, so the DOM stays small with thousands of tasks.
// performance marks: `tasks-view-start` when the view mounts, `tasks-first-render` when the first rows
// are committed to the DOM, `tasks-first-paint` after the frame that shows them; measures of the same
// names from navigation start, and `tasks-first-render-from-view` from the view's mount.
import { useLayoutEffect, useMemo, useRef, useState } from "preact/hooks";
import { describeTasksPaged, taskIp, taskPorts } from "../lib/ecs";
import { arnTail, time } from "../lib/format";
import { useLive } from "../lib/hooks";
import { href } from "../lib/router";
import { Empty, ErrorBox, Field, Status, TableWrap } from "../lib/ui";

const PAGE = 100;

export function Tasks({ cluster }: { cluster: string }) {
  const [desired, setDesired] = useState("RUNNING");
  const [tasks, setTasks] = useState<any[] | undefined>(undefined);
  const [complete, setComplete] = useState(false);
  const [error, setError] = useState<unknown>(undefined);
  const [filter, setFilter] = useState("");
  const [page, setPage] = useState(0);
  const generation = useRef(0);
  const marked = useRef(false);

  const load = (progressive: boolean) => {
    const mine = ++generation.current;
    setComplete(false);
    describeTasksPaged(cluster, { desiredStatus: desired },
      progressive ? (t) => { if (mine === generation.current) setTasks(t); } : undefined)
      .then((t) => { if (mine === generation.current) { setTasks(t); setError(undefined); setComplete(true); } },
        (e) => { if (mine === generation.current) { setError(e); setComplete(true); } });
  };

  // Layout effects run right after the commit, before a frame is painted: the calls start a frame sooner.
  useLayoutEffect(() => {
    performance.mark("tasks-view-start");
    marked.current = false;
  }, [cluster]);
  useLayoutEffect(() => { setTasks(undefined); setPage(0); load(true); }, [cluster, desired]);
  useLive(["ecs"], () => load(false));

  // The first commit with rows: the DOM holds them (a layout effect runs before the browser paints).
  useLayoutEffect(() => {
    if (marked.current || !tasks?.length) return;
    marked.current = true;
    performance.mark("tasks-first-render");
    performance.measure("tasks-first-render", { start: 0, end: "tasks-first-render" });
    performance.measure("tasks-first-render-from-view", "tasks-view-start", "tasks-first-render");
    requestAnimationFrame(() => setTimeout(() => {
      performance.mark("tasks-first-paint");
      performance.measure("tasks-first-paint", { start: 0, end: "tasks-first-paint" });
    }, 0));
  }, [tasks]);

  const shown = useMemo(() => {
    const f = filter.trim().toLowerCase();
    if (!tasks) return [];
    if (!f) return tasks;
    return tasks.filter((t) => [arnTail(t.taskArn), t.lastStatus, t.group, arnTail(t.taskDefinitionArn), taskIp(t),
      t.stoppedReason ?? ""].some((v) => String(v ?? "").toLowerCase().includes(f)));
  }, [tasks, filter]);
  const pages = Math.max(1, Math.ceil(shown.length / PAGE));
  const at = Math.min(page, pages - 1);
  const rows = shown.slice(at * PAGE, at * PAGE + PAGE);

  return (
    <section>
      <p class="crumbs"><a href={href("clusters")}>Clusters</a> / <a href={href("clusters", cluster)}>{cluster}</a> /</p>
      <h1>Tasks in {cluster}</h1>
      <div class="toolbar">
        <Field id="task-status" label="Desired status">
          <select id="task-status" value={desired} onChange={(e) => setDesired(e.currentTarget.value)}>
            <option value="RUNNING">RUNNING</option>
            <option value="STOPPED">STOPPED</option>
          </select>
        </Field>
        <Field id="task-filter" label="Filter">
          <input id="task-filter" type="search" value={filter} placeholder="id, status, group, IP…"
            onInput={(e) => { setFilter(e.currentTarget.value); setPage(0); }} />
        </Field>
        <p class="muted" aria-live="polite" id="task-count">
          {tasks === undefined ? "Loading…" : `${shown.length} of ${tasks.length} tasks${complete ? "" : " (loading more…)"}`}
        </p>
      </div>
      <ErrorBox error={error} what="ListTasks / DescribeTasks" />
      {tasks && complete && !tasks.length ? <Empty>No {desired.toLowerCase()} tasks.</Empty> : null}
      {rows.length ? (
        <TableWrap label="Tasks">
          <table id="tasks">
            <thead><tr>
              <th scope="col">Task</th><th scope="col">Status</th><th scope="col">Desired</th>
              <th scope="col">Health</th><th scope="col">Group</th><th scope="col">Revision</th>
              <th scope="col">IP</th><th scope="col">Ports</th><th scope="col">Started</th><th scope="col">Stopped reason</th>
            </tr></thead>
            <tbody>
              {rows.map((t) => (
                <tr key={t.taskArn}>
                  <th scope="row"><a href={href("clusters", cluster, "tasks", arnTail(t.taskArn))}>{arnTail(t.taskArn)}</a></th>
                  <td><Status value={t.lastStatus} /></td>
                  <td>{t.desiredStatus}</td>
                  <td><Status value={t.healthStatus} /></td>
                  <td>{t.group}</td>
                  <td>{arnTail(t.taskDefinitionArn)}</td>
                  <td>{taskIp(t)}</td>
                  <td>{taskPorts(t)}</td>
                  <td>{time(t.startedAt)}</td>
                  <td>{t.stoppedReason}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      ) : null}
      {pages > 1 ? (
        <nav class="pager" aria-label="Task pages">
          <button type="button" disabled={at === 0} onClick={() => setPage(at - 1)}>Previous</button>
          <span>Page {at + 1} of {pages}</span>
          <button type="button" disabled={at >= pages - 1} onClick={() => setPage(at + 1)}>Next</button>
        </nav>
      ) : null}
    </section>
  );
}
