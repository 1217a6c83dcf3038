// Cloud Map: namespaces (ListNamespaces), services (ListServices) and a service's instances
// (ListInstances) with their attributes.
import { call, callAll, CLOUDMAP } from "../lib/api";
import { time } from "../lib/format";
import { useLoad } from "../lib/hooks";
import { href } from "../lib/router";
import { Empty, ErrorBox, Loading, TableWrap } from "../lib/ui";

export function CloudMap() {
  const ns = useLoad(() => callAll<any>(CLOUDMAP, "ListNamespaces", {}, "Namespaces", "NextToken"), [], ["servicediscovery"]);
  const sv = useLoad(() => callAll<any>(CLOUDMAP, "ListServices", {}, "Services", "NextToken"), [], ["servicediscovery"]);
  return (
    <section>
      <h1>Cloud Map</h1>
      <h2>Namespaces</h2>
      <ErrorBox error={ns.error} what="ListNamespaces" />
      <Loading loading={ns.loading && !ns.data} />
      {ns.data && !ns.data.length ? <Empty>No namespaces.</Empty> : null}
      {ns.data?.length ? (
        <TableWrap label="Namespaces">
          <table>
            <thead><tr><th scope="col">Namespace</th><th scope="col">Id</th><th scope="col">Type</th><th scope="col">Services</th><th scope="col">Created</th></tr></thead>
            <tbody>
              {ns.data.map((n) => (
                <tr key={n.Id}><th scope="row">{n.Name}</th><td>{n.Id}</td><td>{n.Type}</td><td>{n.ServiceCount ?? ""}</td><td>{time(n.CreateDate)}</td></tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      ) : null}
      <h2>Services</h2>
      <ErrorBox error={sv.error} what="ListServices" />
      {sv.data && !sv.data.length ? <Empty>No services.</Empty> : null}
      {sv.data?.length ? (
        <TableWrap label="Cloud Map services">
          <table>
            <thead><tr><th scope="col">Service</th><th scope="col">Namespace</th><th scope="col">Instances</th><th scope="col">DNS records</th></tr></thead>
            <tbody>
              {sv.data.map((s) => (
                <tr key={s.Id}>
                  <th scope="row"><a href={href("cloudmap", "services", s.Id)}>{s.Name}</a></th>
                  <td>{(ns.data ?? []).find((n) => n.Id === s.NamespaceId)?.Name ?? s.NamespaceId ?? ""}</td>
                  <td>{s.InstanceCount ?? ""}</td>
                  <td>{(s.DnsConfig?.DnsRecords ?? []).map((r: any) => `${r.Type} ${r.TTL}s`).join(", ")}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      ) : null}
    </section>
  );
}

export function CloudMapService({ id }: { id: string }) {
  const svc = useLoad(() => call(CLOUDMAP, "GetService", { Id: id }).then((r) => r.Service), [id], ["servicediscovery"]);
  const inst = useLoad(() => callAll<any>(CLOUDMAP, "ListInstances", { ServiceId: id }, "Instances", "NextToken"), [id], ["servicediscovery"]);
  return (
    <section>
      <p class="crumbs"><a href={href("cloudmap")}>Cloud Map</a> /</p>
      <h1>Cloud Map service {svc.data?.Name ?? id}</h1>
      <ErrorBox error={svc.error} what="GetService" />
      <ErrorBox error={inst.error} what="ListInstances" />
      {inst.data && !inst.data.length ? <Empty>No instances.</Empty> : null}
      {inst.data?.length ? (
        <TableWrap label="Instances">
          <table>
            <thead><tr><th scope="col">Instance</th><th scope="col">Attributes</th></tr></thead>
            <tbody>
              {inst.data.map((i) => (
                <tr key={i.Id}>
                  <th scope="row">{i.Id}</th>
                  <td><ul class="plain">{Object.entries(i.Attributes ?? {}).map(([k, v]) => <li key={k}>{k} = {String(v)}</li>)}</ul></td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      ) : null}
    </section>
  );
}
