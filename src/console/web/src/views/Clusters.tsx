// Clusters: ListClusters + DescribeClusters (STATISTICS): counts and capacity providers.
import { describeClusters } from "../lib/ecs";
import { useLoad } from "../lib/hooks";
import { href } from "../lib/router";
import { Empty, ErrorBox, Loading, Status, TableWrap } from "../lib/ui";

export function Clusters() {
  const { data, error, loading } = useLoad(() => describeClusters(), [], ["ecs"]);
  return (
    <section>
      <h1>Clusters</h1>
      <ErrorBox error={error} what="ListClusters / DescribeClusters" />
      <Loading loading={loading && !data} />
      {data && !data.length ? <Empty>No clusters in this account and region.</Empty> : null}
      {data && data.length ? (
        <TableWrap label="Clusters">
          <table>
            <thead><tr>
              <th scope="col">Name</th><th scope="col">Status</th><th scope="col">Services</th>
              <th scope="col">Running tasks</th><th scope="col">Pending tasks</th>
              <th scope="col">Container instances</th><th scope="col">Capacity providers</th>
            </tr></thead>
            <tbody>
              {data.map((c) => (
                <tr key={c.clusterArn}>
                  <th scope="row"><a href={href("clusters", c.clusterName)}>{c.clusterName}</a></th>
                  <td><Status value={c.status} /></td>
                  <td>{c.activeServicesCount}</td>
                  <td><a href={href("clusters", c.clusterName, "tasks")}>{c.runningTasksCount}</a></td>
                  <td>{c.pendingTasksCount}</td>
                  <td>{c.registeredContainerInstancesCount}</td>
                  <td>{(c.capacityProviders ?? []).join(", ")}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      ) : null}
    </section>
  );
}
