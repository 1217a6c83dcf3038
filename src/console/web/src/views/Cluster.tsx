// One cluster: its counts, services (desired/running/pending, rollout) and container instances with
// registered and remaining CPU and memory.
import { describeClusters, describeContainerInstances, describeServices, resource } from "../lib/ecs";
import { useLoad } from "../lib/hooks";
import { arnTail, time } from "../lib/format";
import { href } from "../lib/router";
import { Empty, ErrorBox, Loading, Progress, Status, TableWrap } from "../lib/ui";

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
      {services.data && !services.data.length ? <Empty>No services.</Empty> : null}
      {services.data?.length ? (
        <TableWrap label="Services">
          <table>
            <thead><tr>
              <th scope="col">Service</th><th scope="col">Status</th><th scope="col">Desired</th>
              <th scope="col">Running</th><th scope="col">Pending</th><th scope="col">Rollout</th>
              <th scope="col">Task definition</th>
            </tr></thead>
            <tbody>
              {services.data.map((s) => {
                const primary = (s.deployments ?? []).find((d: any) => d.status === "PRIMARY");
                return (
                  <tr key={s.serviceArn}>
                    <th scope="row"><a href={href("clusters", cluster, "services", s.serviceName)}>{s.serviceName}</a></th>
                    <td><Status value={s.status} /></td>
                    <td>{s.desiredCount}</td>
                    <td><Progress value={s.runningCount} max={s.desiredCount} label={`${s.serviceName} running of desired`} /></td>
                    <td>{s.pendingCount}</td>
                    <td>{primary ? <Status value={primary.rolloutState} /> : null}</td>
                    <td><a href={href("taskdefs", arnTail(s.taskDefinition).split(":")[0] ?? "")}>{arnTail(s.taskDefinition)}</a></td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </TableWrap>
      ) : null}

      <h2>Container instances</h2>
      <ErrorBox error={instances.error} what="ListContainerInstances / DescribeContainerInstances" />
      {instances.data && !instances.data.length ? <Empty>No container instances.</Empty> : null}
      {instances.data?.length ? (
        <TableWrap label="Container instances">
          <table>
            <thead><tr>
              <th scope="col">Instance</th><th scope="col">Status</th><th scope="col">Agent</th>
              <th scope="col">Running tasks</th><th scope="col">CPU free / registered</th>
              <th scope="col">Memory (MiB) free / registered</th><th scope="col">Registered</th>
            </tr></thead>
            <tbody>
              {instances.data.map((i) => (
                <tr key={i.containerInstanceArn}>
                  <th scope="row">{i.ec2InstanceId || arnTail(i.containerInstanceArn)}</th>
                  <td><Status value={i.status} /></td>
                  <td>{i.agentConnected ? "connected" : "disconnected"}</td>
                  <td>{i.runningTasksCount}</td>
                  <td>{resource(i.remainingResources, "CPU")} / {resource(i.registeredResources, "CPU")}</td>
                  <td>{resource(i.remainingResources, "MEMORY")} / {resource(i.registeredResources, "MEMORY")}</td>
                  <td>{time(i.registeredAt)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      ) : null}
    </section>
  );
}
