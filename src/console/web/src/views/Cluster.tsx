// One cluster: its counts, services (desired/running/pending, rollout) and container instances with
// registered and remaining CPU and memory.
import { describeClusters, describeContainerInstances, describeServices, resource } from "../lib/ecs";
import { useLoad } from "../lib/hooks";
import { arnTail, time } from "../lib/format";
import { href } from "../lib/router";
import { DataTable, ErrorBox, Loading, Progress, Status } from "../lib/ui";

export function Cluster({ cluster }: { cluster: string }) {
  const c = useLoad(() => describeClusters([cluster]), [cluster], ["ecs"]);
  const services = useLoad(() => describeServices(cluster), [cluster], ["ecs"]);
  const instances = useLoad(() => describeContainerInstances(cluster), [cluster], ["ecs"]);
  const info = c.data?.[0];
  return (
    <section>
      <p class="crumbs"><a href={href("clusters")}>Clusters</a> /</p>
      <h1>Cluster {cluster}</h1>
      <ErrorBox error={c.error} what="DescribeClusters" />
      {info ? (
        <dl class="facts">
          <div><dt>Status</dt><dd><Status value={info.status} /></dd></div>
          <div><dt>Services</dt><dd>{info.activeServicesCount}</dd></div>
          <div><dt>Running tasks</dt><dd>{info.runningTasksCount}</dd></div>
          <div><dt>Pending tasks</dt><dd>{info.pendingTasksCount}</dd></div>
          <div><dt>Container instances</dt><dd>{info.registeredContainerInstancesCount}</dd></div>
          <div><dt>Capacity providers</dt><dd>{(info.capacityProviders ?? []).join(", ") || "none"}</dd></div>
        </dl>
      ) : null}
      <p><a href={href("clusters", cluster, "tasks")}>Tasks of this cluster</a></p>

      <h2>Services</h2>
      <ErrorBox error={services.error} what="ListServices / DescribeServices" />
      <Loading loading={services.loading && !services.data} />
      <DataTable label="Services" rows={services.data} rowKey={(s) => s.serviceArn} empty="No services."
        columns={["Service", "Status", "Desired", "Running", "Pending", "Rollout", "Task definition"]}
        cells={(s) => {
          const primary = (s.deployments ?? []).find((d: any) => d.status === "PRIMARY");
          return [
            <a href={href("clusters", cluster, "services", s.serviceName)}>{s.serviceName}</a>,
            <Status value={s.status} />,
            s.desiredCount,
            <Progress value={s.runningCount} max={s.desiredCount} label={`${s.serviceName} running of desired`} />,
            s.pendingCount,
            primary ? <Status value={primary.rolloutState} /> : null,
            <a href={href("taskdefs", arnTail(s.taskDefinition).split(":")[0] ?? "")}>{arnTail(s.taskDefinition)}</a>,
          ];
        }} />

      <h2>Container instances</h2>
      <ErrorBox error={instances.error} what="ListContainerInstances / DescribeContainerInstances" />
      <DataTable label="Container instances" rows={instances.data} rowKey={(i) => i.containerInstanceArn}
        empty="No container instances."
        columns={["Instance", "Status", "Agent", "Running tasks", "CPU free / registered", "Memory (MiB) free / registered", "Registered"]}
        cells={(i) => [
          i.ec2InstanceId || arnTail(i.containerInstanceArn),
          <Status value={i.status} />,
          i.agentConnected ? "connected" : "disconnected",
          i.runningTasksCount,
          `${resource(i.remainingResources, "CPU")} / ${resource(i.registeredResources, "CPU")}`,
          `${resource(i.remainingResources, "MEMORY")} / ${resource(i.registeredResources, "MEMORY")}`,
          time(i.registeredAt),
        ]} />
    </section>
  );
}
