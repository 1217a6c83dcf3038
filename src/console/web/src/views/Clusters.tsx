// Clusters: ListClusters + DescribeClusters (STATISTICS): counts and capacity providers.
import { describeClusters } from "../lib/ecs";
import { useLoad } from "../lib/hooks";
import { href } from "../lib/router";
import { DataTable, ErrorBox, Loading, Status } from "../lib/ui";

export function Clusters() {
  const { data, error, loading } = useLoad(() => describeClusters(), [], ["ecs"]);
  return (
    <section>
      <h1>Clusters</h1>
      <ErrorBox error={error} what="ListClusters / DescribeClusters" />
      <Loading loading={loading && !data} />
      <DataTable label="Clusters" rows={data} rowKey={(c) => c.clusterArn} empty="No clusters in this account and region."
        columns={["Name", "Status", "Services", "Running tasks", "Pending tasks", "Container instances", "Capacity providers"]}
        cells={(c) => [
          <a href={href("clusters", c.clusterName)}>{c.clusterName}</a>,
          <Status value={c.status} />,
          c.activeServicesCount,
          <a href={href("clusters", c.clusterName, "tasks")}>{c.runningTasksCount}</a>,
          c.pendingTasksCount,
          c.registeredContainerInstancesCount,
          (c.capacityProviders ?? []).join(", "),
        ]} />
    </section>
  );
}
