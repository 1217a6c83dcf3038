// The deploy platform (PaddockConsole's deploy actions; each answers {"document"} holding the deploy
// controller's own JSON): projects, deployments with their state, events, per-task observations,
// logs, the URL; Redeploy (from a deployment) and Stop.
import { useState } from "preact/hooks";
import { call, CONSOLE } from "../lib/api";
import { time } from "../lib/format";
import { useLoad } from "../lib/hooks";
import { href } from "../lib/router";
import { ActionButton, DataTable, ErrorBox, Field, Loading, Status } from "../lib/ui";

async function doc<T = any>(action: string, input: object): Promise<T> {
  const r = await call<{ document: string }>(CONSOLE, action, input);
  return JSON.parse(r.document) as T;
}

async function allDeployments(project: string): Promise<any[]> {
  const out: any[] = [];
  let nextToken: string | undefined;
  do {
    const input: any = {};
    if (project) input.project = project;
    if (nextToken) input.nextToken = nextToken;
    const page = await doc("ListDeployments", input);
    out.push(...(page.deployments ?? []));
    nextToken = page.next_token;
  } while (nextToken && out.length < 500);
  return out;
}

export function Deployments() {
  const [project, setProject] = useState("");
  const { data, error, loading } = useLoad(() => allDeployments(project), [project], ["deploy", "ecs"]);
  const all = useLoad(() => allDeployments(""), [], ["deploy"]);
  const projects = [...new Set((all.data ?? []).map((d) => d.project as string))].sort();
  return (
    <section>
      <h1>Deployments</h1>
      <Field id="project" label="Project">
        <select id="project" value={project} onChange={(e) => setProject(e.currentTarget.value)}>
          <option value="">All projects</option>
          {projects.map((p) => <option key={p} value={p}>{p}</option>)}
        </select>
      </Field>
      <ErrorBox error={error} what="ListDeployments" />
      <Loading loading={loading && !data} />
      <DataTable label="Deployments" id="deployments" rows={data} rowKey={(d) => d.id} empty="No deployments."
        rowAttrs={(d) => ({ "data-state": d.state })}
        columns={["Deployment", "Project", "Group", "State", "Active", "URL", "Created"]}
        cells={(d) => [<a href={href("deploy", d.id)}>{d.id}</a>, d.project, d.group, <Status value={d.state} />,
          d.active ? "active" : "", d.url, time(d.created_at)]} />
    </section>
  );
}

function Logs({ id }: { id: string }) {
  const { data, error, reload } = useLoad(() => doc("GetDeploymentLogs", { id, startTime: Date.now() - 3600_000 }), [id]);
  return (
    <>
      <button type="button" onClick={reload}>Refresh logs</button>
      <ErrorBox error={error} what="GetDeploymentLogs" />
      {data ? (
        <div class="log-lines" role="log" aria-label="Deployment logs" tabIndex={0}>
          {(data.events ?? []).length ? data.events.map((l: any) => (
            <div class="log-line" key={l.id ?? `${l.stream}${l.timestamp}${l.message}`}>
              <time>{time(l.timestamp)}</time> <span class="log-stream">{l.stream}</span> <span class="log-message">{l.message}</span>
            </div>
          )) : <p class="muted">No lines in the last hour.</p>}
        </div>
      ) : null}
    </>
  );
}

export function Deployment({ id }: { id: string }) {
  const d = useLoad(() => doc("DescribeDeployment", { id }), [id], ["deploy", "ecs"]);
  const events = useLoad(() => doc("ListDeploymentEvents", { id }), [id], ["deploy"]);
  const [redeployed, setRedeployed] = useState<any>(undefined);
  const x = d.data;
  const reload = () => { d.reload(); events.reload(); };
  return (
    <section>
      <p class="crumbs"><a href={href("deploy")}>Deployments</a> /</p>
      <h1>Deployment {id}</h1>
      <ErrorBox error={d.error} what="DescribeDeployment" />
      <Loading loading={d.loading && !x} />
      {x ? (
        <>
          <dl class="facts" id="deployment-facts">
            <div><dt>Project</dt><dd>{x.project}</dd></div>
            <div><dt>Group</dt><dd>{x.group}</dd></div>
            <div><dt>Environment</dt><dd>{x.environment || "(none)"}</dd></div>
            <div><dt>State</dt><dd data-field="state"><Status value={x.state} /></dd></div>
            <div><dt>Reason</dt><dd>{x.reason}</dd></div>
            <div><dt>Active</dt><dd>{x.active ? "yes" : "no"}</dd></div>
            <div><dt>URL</dt><dd>{x.url}</dd></div>
            <div><dt>Created</dt><dd>{time(x.created_at)}</dd></div>
            <div><dt>Healthy at</dt><dd>{time(x.healthy_at)}</dd></div>
            <div><dt>Finished at</dt><dd>{time(x.finished_at)}</dd></div>
            <div><dt>Expires at</dt><dd>{time(x.expires_at)}</dd></div>
            {x.from ? <div><dt>From</dt><dd><a href={href("deploy", x.from)}>{x.from}</a></dd></div> : null}
          </dl>
          <h2>Actions</h2>
          <div class="actions">
            <ActionButton id="redeploy" label="Redeploy" confirm="Create a new deployment from this one's spec?"
              run={async () => setRedeployed(await doc("Redeploy", { from: id }))} />
            <ActionButton id="stop-deployment" label="Stop deployment" danger confirm="Stop this deployment?"
              onDone={reload} run={() => doc("StopDeployment", { id })} />
          </div>
          {redeployed ? <p role="status">New deployment <a href={href("deploy", redeployed.id)}>{redeployed.id}</a> ({redeployed.state}).</p> : null}
          <h2>Tasks</h2>
          <DataTable label="Deployment tasks" rows={x.tasks ?? []} rowKey={(t: any) => t.task + t.container}
            empty="No tasks observed."
            columns={["Container", "Task", "Status", "Health", "Address", "Exit code", "Stopped reason"]}
            cells={(t: any) => [t.container, t.task, <Status value={t.status} />, <Status value={t.health} />, t.address,
              t.exit_code ?? "", t.stopped_reason]} />
          <h2>Events</h2>
          <ErrorBox error={events.error} what="ListDeploymentEvents" />
          <ol class="timeline" id="deployment-events">
            {(events.data?.events ?? []).map((e: any) => (
              <li key={e.seq}><time>{time(e.at)}</time> <span class="kind">{e.kind}</span> {e.message}</li>
            ))}
          </ol>
          <h2>Logs</h2>
          <Logs id={id} />
          <h2>Spec</h2>
          <pre class="json">{JSON.stringify(x.spec, null, 2)}</pre>
        </>
      ) : null}
    </section>
  );
}
