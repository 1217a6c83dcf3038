// One task: status, health, IP, ports, stop code and reason, each container's exit code and reason,
// times; a Stop action with a typed reason; a live tail of a container's awslogs stream
// (awslogs-stream-prefix/<container>/<task id>, from the task definition's logConfiguration).
import { useState } from "preact/hooks";
import { call, ECS } from "../lib/api";
import { arnTail, time } from "../lib/format";
import { useLoad } from "../lib/hooks";
import { href } from "../lib/router";
import { ActionButton, DataTable, Empty, ErrorBox, Field, Loading, Status } from "../lib/ui";
import { taskIp, taskPorts } from "../lib/ecs";
import { LiveTail } from "./LiveTail";

interface LogTarget { container: string; group: string; stream: string }

function logTargets(td: any, taskId: string): LogTarget[] {
  const out: LogTarget[] = [];
  for (const c of td?.containerDefinitions ?? []) {
    const lc = c.logConfiguration;
    if (lc?.logDriver !== "awslogs") continue;
    const group = lc.options?.["awslogs-group"];
    const prefix = lc.options?.["awslogs-stream-prefix"];
    if (!group || !prefix) continue;
    out.push({ container: c.name, group, stream: `${prefix}/${c.name}/${taskId}` });
  }
  return out;
}

function StopForm({ cluster, task, onDone }: { cluster: string; task: string; onDone: () => void }) {
  const [reason, setReason] = useState("");
  return (
    <form class="inline-form" onSubmit={(e) => e.preventDefault()}>
      <Field id="stop-reason" label="Reason for stopping">
        <input id="stop-reason" value={reason} maxLength={255} onInput={(e) => setReason(e.currentTarget.value)} />
      </Field>
      <ActionButton id="stop-task" label="Stop task" danger confirm="Stop this task?" onDone={onDone}
        run={() => call(ECS, "StopTask", reason ? { cluster, task, reason } : { cluster, task })} />
    </form>
  );
}

export function Task({ cluster, task }: { cluster: string; task: string }) {
  const { data, error, loading, reload } = useLoad(async () => {
    const r = await call(ECS, "DescribeTasks", { cluster, tasks: [task], include: ["TAGS"] });
    if (r.failures?.length && !r.tasks?.length) {
      throw new Error(`${r.failures[0].reason ?? "MISSING"}: ${r.failures[0].detail ?? r.failures[0].arn ?? ""}`);
    }
    return r.tasks[0];
  }, [cluster, task], ["ecs"]);
  const tdArn = data?.taskDefinitionArn;
  const td = useLoad(async () => tdArn ? (await call(ECS, "DescribeTaskDefinition", { taskDefinition: tdArn })).taskDefinition : undefined,
    [tdArn]);
  const targets = logTargets(td.data, arnTail(data?.taskArn ?? task));
  const [container, setContainer] = useState("");
  const target = targets.find((t) => t.container === container) ?? targets[0];
  const t = data;
  return (
    <section>
      <p class="crumbs"><a href={href("clusters")}>Clusters</a> / <a href={href("clusters", cluster)}>{cluster}</a> /{" "}
        <a href={href("clusters", cluster, "tasks")}>Tasks</a> /</p>
      <h1>Task {task}</h1>
      <ErrorBox error={error} what="DescribeTasks" />
      <Loading loading={loading && !data} />
      {t ? (
        <>
          <dl class="facts" id="task-facts">
            <div><dt>Status</dt><dd data-field="lastStatus"><Status value={t.lastStatus} /></dd></div>
            <div><dt>Desired</dt><dd>{t.desiredStatus}</dd></div>
            <div><dt>Health</dt><dd><Status value={t.healthStatus} /></dd></div>
            <div><dt>IP</dt><dd>{taskIp(t)}</dd></div>
            <div><dt>Ports</dt><dd>{taskPorts(t)}</dd></div>
            <div><dt>Group</dt><dd>{t.group}</dd></div>
            <div><dt>Task definition</dt><dd><a href={href("taskdefs", arnTail(t.taskDefinitionArn).split(":")[0] ?? "", arnTail(t.taskDefinitionArn).split(":")[1] ?? "")}>{arnTail(t.taskDefinitionArn)}</a></dd></div>
            <div><dt>Launch type</dt><dd>{t.launchType ?? t.capacityProviderName}</dd></div>
            <div><dt>Created</dt><dd>{time(t.createdAt)}</dd></div>
            <div><dt>Started</dt><dd>{time(t.startedAt)}</dd></div>
            <div><dt>Stopping</dt><dd>{time(t.stoppingAt)}</dd></div>
            <div><dt>Stopped</dt><dd>{time(t.stoppedAt)}</dd></div>
            <div><dt>Stop code</dt><dd data-field="stopCode">{t.stopCode}</dd></div>
            <div><dt>Stopped reason</dt><dd data-field="stoppedReason">{t.stoppedReason}</dd></div>
          </dl>
          {t.desiredStatus !== "STOPPED" ? (
            <>
              <h2>Actions</h2>
              <StopForm cluster={cluster} task={t.taskArn} onDone={reload} />
            </>
          ) : null}
          <h2>Containers</h2>
          <DataTable label="Containers" id="containers" rows={t.containers ?? []} rowKey={(c: any) => c.name}
            columns={["Container", "Status", "Health", "Exit code", "Reason", "Image"]}
            cells={(c: any) => [c.name, <Status value={c.lastStatus} />, <Status value={c.healthStatus} />, c.exitCode ?? "",
              c.reason ?? "", c.image]} />
          <h2>Logs</h2>
          <ErrorBox error={td.error} what="DescribeTaskDefinition" />
          {td.data && !targets.length ? <Empty>No container of this task logs with awslogs.</Empty> : null}
          {target ? (
            <>
              {targets.length > 1 ? (
                <Field id="log-container" label="Container">
                  <select id="log-container" value={target.container} onChange={(e) => setContainer(e.currentTarget.value)}>
                    {targets.map((x) => <option key={x.container} value={x.container}>{x.container}</option>)}
                  </select>
                </Field>
              ) : null}
              <p class="small">Log group <a href={href("logs", target.group)}>{target.group}</a>, stream {target.stream}</p>
              <LiveTail group={target.group} stream={target.stream} backlogMinutes={24 * 60} />
            </>
          ) : null}
        </>
      ) : null}
    </section>
  );
}
