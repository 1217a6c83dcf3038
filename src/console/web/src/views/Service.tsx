// One service: counts, scale and force-new-deployment actions, its deployments with rollout state and
// progress, circuit breaker, a rollout timeline, its tasks and its events feed — all refreshed live.
import { useState } from "preact/hooks";
import { call, ECS } from "../lib/api";
import { describeServices, describeTasksPaged, taskIp } from "../lib/ecs";
import { arnTail, time, toDate } from "../lib/format";
import { useLoad } from "../lib/hooks";
import { href } from "../lib/router";
import { ActionButton, DataTable, Empty, ErrorBox, Field, Loading, Progress, Status, TableWrap } from "../lib/ui";

function ScaleForm({ cluster, service, desired, onDone }: {
  cluster: string; service: string; desired: number; onDone: () => void;
}) {
  const [count, setCount] = useState(String(desired));
  return (
    <form class="inline-form" onSubmit={(e) => e.preventDefault()}>
      <Field id="desired-count" label="Desired tasks">
        <input id="desired-count" type="number" min={0} inputMode="numeric" value={count}
          onInput={(e) => setCount(e.currentTarget.value)} />
      </Field>
      <ActionButton id="scale" label="Update desired count" onDone={onDone}
        run={() => call(ECS, "UpdateService", { cluster, service, desiredCount: Number(count) })} />
    </form>
  );
}

function Timeline({ service }: { service: any }) {
  const items: { at: number; text: string; key: string }[] = [];
  for (const d of service.deployments ?? []) {
    const created = toDate(d.createdAt)?.getTime();
    if (created) items.push({ at: created, key: d.id + "c", text: `Deployment ${d.id} of ${arnTail(d.taskDefinition)} started` });
    const updated = toDate(d.updatedAt)?.getTime();
    if (updated && updated !== created) {
      items.push({ at: updated, key: d.id + "u", text: `Deployment ${d.id}: ${d.status}, rollout ${d.rolloutState ?? ""}` +
        ` (${d.runningCount}/${d.desiredCount} running)` + (d.rolloutStateReason ? ` — ${d.rolloutStateReason}` : "") });
    }
  }
  for (const e of (service.events ?? []).slice(0, 30)) {
    const at = toDate(e.createdAt)?.getTime();
    if (at) items.push({ at, key: e.id, text: e.message });
  }
  items.sort((a, b) => b.at - a.at);
  if (!items.length) return <Empty>Nothing yet.</Empty>;
  return (
    <ol class="timeline">
      {items.slice(0, 40).map((i) => (
        <li key={i.key}><time dateTime={new Date(i.at).toISOString()}>{time(i.at)}</time> {i.text}</li>
      ))}
    </ol>
  );
}

function ServiceTasks({ cluster, service }: { cluster: string; service: string }) {
  const { data, error } = useLoad(() => describeTasksPaged(cluster, { serviceName: service }),
    [cluster, service], ["ecs"]);
  return (
    <>
      <ErrorBox error={error} what="ListTasks / DescribeTasks" />
      <DataTable label="Tasks of the service" rows={data} rowKey={(t) => t.taskArn} empty="No running tasks."
        columns={["Task", "Status", "Health", "Revision", "IP", "Started"]}
        cells={(t) => [<a href={href("clusters", cluster, "tasks", arnTail(t.taskArn))}>{arnTail(t.taskArn)}</a>,
          <Status value={t.lastStatus} />, <Status value={t.healthStatus} />, arnTail(t.taskDefinitionArn), taskIp(t),
          time(t.startedAt)]} />
    </>
  );
}

export function Service({ cluster, service }: { cluster: string; service: string }) {
  const { data, error, loading, reload } = useLoad(() => describeServices(cluster, [service]), [cluster, service], ["ecs"]);
  const s = data?.[0];
  const breaker = s?.deploymentConfiguration?.deploymentCircuitBreaker;
  return (
    <section>
      <p class="crumbs"><a href={href("clusters")}>Clusters</a> / <a href={href("clusters", cluster)}>{cluster}</a> /</p>
      <h1>Service {service}</h1>
      <ErrorBox error={error} what="DescribeServices" />
      <Loading loading={loading && !data} />
      {data && !s ? <Empty>No such service in {cluster}.</Empty> : null}
      {s ? (
        <>
          <dl class="facts" id="service-counts">
            <div><dt>Status</dt><dd><Status value={s.status} /></dd></div>
            <div><dt>Desired</dt><dd data-field="desired">{s.desiredCount}</dd></div>
            <div><dt>Running</dt><dd data-field="running">{s.runningCount}</dd></div>
            <div><dt>Pending</dt><dd data-field="pending">{s.pendingCount}</dd></div>
            <div><dt>Launch type</dt><dd>{s.launchType ?? (s.capacityProviderStrategy ?? []).map((c: any) => c.capacityProvider).join(", ")}</dd></div>
            <div><dt>Task definition</dt><dd>{arnTail(s.taskDefinition)}</dd></div>
          </dl>
          <h2>Actions</h2>
          <div class="actions">
            <ScaleForm key={s.desiredCount} cluster={cluster} service={service} desired={s.desiredCount} onDone={reload} />
            <ActionButton id="force-deploy" label="Force new deployment" onDone={reload}
              confirm="Replace every task of this service with a new deployment?"
              run={() => call(ECS, "UpdateService", { cluster, service, forceNewDeployment: true })} />
          </div>

          <h2>Deployments</h2>
          <DataTable label="Deployments" id="deployments" rows={s.deployments ?? []} rowKey={(d: any) => d.id}
            rowAttrs={(d: any) => ({ "data-status": d.status, "data-rollout": d.rolloutState })}
            columns={["Deployment", "Status", "Rollout", "Running / desired", "Pending", "Failed tasks", "Task definition", "Created", "Updated"]}
            cells={(d: any) => [d.id, <Status value={d.status} />,
              <>{<Status value={d.rolloutState} />}{d.rolloutStateReason ? <div class="small">{d.rolloutStateReason}</div> : null}</>,
              <Progress value={d.runningCount} max={d.desiredCount} label={`Deployment ${d.id} running of desired`} />,
              d.pendingCount, d.failedTasks ?? 0, arnTail(d.taskDefinition), time(d.createdAt), time(d.updatedAt)]} />

          <h2>Circuit breaker</h2>
          <p>
            {breaker ? `${breaker.enable ? "Enabled" : "Disabled"}; rollback ${breaker.rollback ? "on" : "off"}. ` : "Not configured. "}
            {(s.deployments ?? []).filter((d: any) => d.rolloutState === "FAILED").length
              ? "A rollout failed: " + (s.deployments.find((d: any) => d.rolloutState === "FAILED")?.rolloutStateReason ?? "")
              : `Failed tasks in the primary deployment: ${(s.deployments ?? []).find((d: any) => d.status === "PRIMARY")?.failedTasks ?? 0}.`}
            {" "}Minimum healthy {s.deploymentConfiguration?.minimumHealthyPercent ?? "?"}%, maximum {s.deploymentConfiguration?.maximumPercent ?? "?"}%.
          </p>

          <h2>Tasks</h2>
          <ServiceTasks cluster={cluster} service={service} />

          <h2>Rollout timeline</h2>
          <Timeline service={s} />

          <h2>Events</h2>
          <TableWrap label="Service events">
            <table id="events">
              <thead><tr><th scope="col">Time</th><th scope="col">Message</th></tr></thead>
              <tbody>
                {(s.events ?? []).slice(0, 100).map((e: any) => (
                  <tr key={e.id}><td class="nowrap">{time(e.createdAt)}</td><td>{e.message}</td></tr>
                ))}
              </tbody>
            </table>
          </TableWrap>
        </>
      ) : null}
    </section>
  );
}
