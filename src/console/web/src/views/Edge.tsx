// The edge (PaddockConsole DescribeEdge: the text of its Traefik-shaped API): overview counts,
// routers, services with each server's UP/DOWN, middlewares and the drains in progress.
import { call, CONSOLE } from "../lib/api";
import { time } from "../lib/format";
import { useLoad } from "../lib/hooks";
import { Empty, ErrorBox, Status, TableWrap } from "../lib/ui";

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
          {(data.routers ?? []).length ? (
            <TableWrap label="Routers">
              <table>
                <thead><tr><th scope="col">Router</th><th scope="col">Rule</th><th scope="col">Entry points</th><th scope="col">Service</th><th scope="col">Middlewares</th><th scope="col">Status</th><th scope="col">Error</th></tr></thead>
                <tbody>
                  {data.routers.map((r: any) => (
                    <tr key={r.name}>
                      <th scope="row">{r.name}</th><td>{r.rule}</td><td>{(r.entryPoints ?? []).join(", ")}</td>
                      <td>{r.service}</td><td>{(r.middlewares ?? []).join(", ")}</td>
                      <td><Status value={r.status} /></td><td>{(r.error ?? []).join("; ")}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </TableWrap>
          ) : <Empty>No routers.</Empty>}
          <h2>Services</h2>
          {(data.services ?? []).length ? (
            <TableWrap label="Edge services">
              <table>
                <thead><tr><th scope="col">Service</th><th scope="col">Type</th><th scope="col">Status</th><th scope="col">Servers</th><th scope="col">Used by</th></tr></thead>
                <tbody>
                  {data.services.map((s: any) => (
                    <tr key={s.name}>
                      <th scope="row">{s.name}</th><td>{s.type}</td><td><Status value={s.status} /></td>
                      <td>
                        <ul class="plain">
                          {(s.loadBalancer?.servers ?? []).map((v: any) => (
                            <li key={v.url}>{v.url} <Status value={s.serverStatus?.[v.url] ?? "pending first probe"} /></li>
                          ))}
                          {(s.weighted?.services ?? []).map((w: any) => <li key={w.name}>{w.name} (weight {w.weight ?? 1})</li>)}
                        </ul>
                      </td>
                      <td>{(s.usedBy ?? []).join(", ")}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </TableWrap>
          ) : <Empty>No services.</Empty>}
          <h2>Middlewares</h2>
          {(data.middlewares ?? []).length ? (
            <TableWrap label="Middlewares">
              <table>
                <thead><tr><th scope="col">Middleware</th><th scope="col">Type</th><th scope="col">Status</th><th scope="col">Used by</th></tr></thead>
                <tbody>
                  {data.middlewares.map((m: any) => (
                    <tr key={m.name}><th scope="row">{m.name}</th><td>{m.type}</td><td><Status value={m.status} /></td><td>{(m.usedBy ?? []).join(", ")}</td></tr>
                  ))}
                </tbody>
              </table>
            </TableWrap>
          ) : <Empty>No middlewares.</Empty>}
          <h2>Drains in progress</h2>
          {(data.drains ?? []).length ? (
            <TableWrap label="Drains">
              <table>
                <thead><tr><th scope="col">Task</th><th scope="col">Server</th><th scope="col">In flight</th><th scope="col">Since</th><th scope="col">Deadline</th></tr></thead>
                <tbody>
                  {data.drains.map((d: any) => (
                    <tr key={d.taskArn + d.url}><th scope="row">{d.taskArn}</th><td>{d.url}</td><td>{d.inFlight}</td><td>{time(d.since)}</td><td>{time(d.deadline)}</td></tr>
                  ))}
                </tbody>
              </table>
            </TableWrap>
          ) : <Empty>No drains in progress.</Empty>}
        </>
      ) : null}
    </section>
  );
}
