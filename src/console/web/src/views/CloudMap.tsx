// Cloud Map: namespaces (ListNamespaces), services (ListServices) and a service's instances
// (ListInstances) with their attributes.
import { call, callAll, CLOUDMAP } from "../lib/api";
import { time } from "../lib/format";
import { useLoad } from "../lib/hooks";
import { href } from "../lib/router";
import { DataTable, ErrorBox, Loading } from "../lib/ui";

export function CloudMap() {
  const ns = useLoad(() => callAll<any>(CLOUDMAP, "ListNamespaces", {}, "Namespaces", "NextToken"), [], ["servicediscovery"]);
  const sv = useLoad(() => callAll<any>(CLOUDMAP, "ListServices", {}, "Services", "NextToken"), [], ["servicediscovery"]);
  return (
    <section>
      <h1>Cloud Map</h1>
      <h2>Namespaces</h2>
      <ErrorBox error={ns.error} what="ListNamespaces" />
      <Loading loading={ns.loading && !ns.data} />
      <DataTable label="Namespaces" rows={ns.data} rowKey={(n) => n.Id} empty="No namespaces."
        columns={["Namespace", "Id", "Type", "Services", "Created"]}
        cells={(n) => [n.Name, n.Id, n.Type, n.ServiceCount ?? "", time(n.CreateDate)]} />
      <h2>Services</h2>
      <ErrorBox error={sv.error} what="ListServices" />
      <DataTable label="Cloud Map services" rows={sv.data} rowKey={(s) => s.Id} empty="No services."
        columns={["Service", "Namespace", "Instances", "DNS records"]}
        cells={(s) => [
          <a href={href("cloudmap", "services", s.Id)}>{s.Name}</a>,
          (ns.data ?? []).find((n) => n.Id === s.NamespaceId)?.Name ?? s.NamespaceId ?? "",
          s.InstanceCount ?? "",
          (s.DnsConfig?.DnsRecords ?? []).map((r: any) => `${r.Type} ${r.TTL}s`).join(", "),
        ]} />
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
      <DataTable label="Instances" rows={inst.data} rowKey={(i) => i.Id} empty="No instances."
        columns={["Instance", "Attributes"]}
        cells={(i) => [i.Id,
          <ul class="plain">{Object.entries(i.Attributes ?? {}).map(([k, v]) => <li key={k}>{k} = {String(v)}</li>)}</ul>]} />
    </section>
  );
}
