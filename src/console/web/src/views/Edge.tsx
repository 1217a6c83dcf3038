// The edge (PaddockConsole DescribeEdge: the text of its Traefik-shaped API): overview counts,
// routers, services with each server's UP/DOWN, middlewares and the drains in progress.
import { call, CONSOLE } from "../lib/api";
import { time } from "../lib/format";
import { useLoad } from "../lib/hooks";
import { DataTable, ErrorBox, Status } from "../lib/ui";

async function edge(what: string): Promise<any> {
  const r = await call<{ document: string }>(CONSOLE, "DescribeEdge", { what });
  return JSON.parse(r.document);
}

export function Edge() {
  const { data, error } = useLoad(async () => {
    const [overview, routers, services, middlewares, drains] = await Promise.all(
      ["overview", "routers", "services", "middlewares", "drains"].map(edge));
    return { overview, routers, services, middlewares, drains };
  }, [], ["ecs"]);
  return (
    <section>
      <h1>Edge</h1>
      <ErrorBox error={error} what="DescribeEdge" />
      {data ? (
        <>
          <dl class="facts">
            {["routers", "services", "middlewares"].map((k) => (
              <div key={k}><dt>HTTP {k}</dt><dd>{data.overview?.http?.[k]?.total ?? 0} ({data.overview?.http?.[k]?.errors ?? 0} errors, {data.overview?.http?.[k]?.warnings ?? 0} warnings)</dd></div>
            ))}
          </dl>
          <h2>Routers</h2>
          <DataTable label="Routers" rows={data.routers ?? []} rowKey={(r: any) => r.name} empty="No routers."
            columns={["Router", "Rule", "Entry points", "Service", "Middlewares", "Status", "Error"]}
            cells={(r: any) => [r.name, r.rule, (r.entryPoints ?? []).join(", "), r.service, (r.middlewares ?? []).join(", "),
              <Status value={r.status} />, (r.error ?? []).join("; ")]} />
          <h2>Services</h2>
          <DataTable label="Edge services" rows={data.services ?? []} rowKey={(s: any) => s.name} empty="No services."
            columns={["Service", "Type", "Status", "Servers", "Used by"]}
            cells={(s: any) => [s.name, s.type, <Status value={s.status} />,
              <ul class="plain">
                {(s.loadBalancer?.servers ?? []).map((v: any) => (
                  <li key={v.url}>{v.url} <Status value={s.serverStatus?.[v.url] ?? "pending first probe"} /></li>
                ))}
                {(s.weighted?.services ?? []).map((w: any) => <li key={w.name}>{w.name} (weight {w.weight ?? 1})</li>)}
              </ul>,
              (s.usedBy ?? []).join(", ")]} />
          <h2>Middlewares</h2>
          <DataTable label="Middlewares" rows={data.middlewares ?? []} rowKey={(m: any) => m.name} empty="No middlewares."
            columns={["Middleware", "Type", "Status", "Used by"]}
            cells={(m: any) => [m.name, m.type, <Status value={m.status} />, (m.usedBy ?? []).join(", ")]} />
          <h2>Drains in progress</h2>
          <DataTable label="Drains" rows={data.drains ?? []} rowKey={(d: any) => d.taskArn + d.url} empty="No drains in progress."
            columns={["Task", "Server", "In flight", "Since", "Deadline"]}
            cells={(d: any) => [d.taskArn, d.url, d.inFlight, time(d.since), time(d.deadline)]} />
        </>
      ) : null}
    </section>
  );
}
