// Task definitions: families (ListTaskDefinitionFamilies), a family's revisions
// (ListTaskDefinitions), a revision's JSON (DescribeTaskDefinition), a line diff of two revisions,
// RunTask from a revision and DeregisterTaskDefinition.
import { useState } from "preact/hooks";
import { call, callAll, callQuery, ECS } from "../lib/api";
import { describeClusters } from "../lib/ecs";
import { arnTail } from "../lib/format";
import { useLoad } from "../lib/hooks";
import { href } from "../lib/router";
import { ActionButton, Empty, ErrorBox, Field, Json, Loading } from "../lib/ui";

export function TaskDefinitions() {
  const [status, setStatus] = useState("ACTIVE");
  const { data, error, loading } = useLoad(
    () => callAll<string>(ECS, "ListTaskDefinitionFamilies", { status, maxResults: 100 }, "families"), [status], ["ecs"]);
  return (
    <section>
      <h1>Task definitions</h1>
      <Field id="family-status" label="Families with revisions that are">
        <select id="family-status" value={status} onChange={(e) => setStatus(e.currentTarget.value)}>
          <option value="ACTIVE">ACTIVE</option><option value="INACTIVE">INACTIVE</option><option value="ALL">ALL</option>
        </select>
      </Field>
      <ErrorBox error={error} what="ListTaskDefinitionFamilies" />
      <Loading loading={loading && !data} />
      {data && !data.length ? <Empty>No task definition families.</Empty> : null}
      <ul class="list">
        {(data ?? []).map((f) => <li key={f}><a href={href("taskdefs", f)}>{f}</a></li>)}
      </ul>
    </section>
  );
}

/** The lines of `a` and `b` as a longest-common-subsequence diff: " " same, "-" only in a, "+" only in b. */
export function lineDiff(a: string[], b: string[]): [string, string][] {
  const n = a.length, m = b.length;
  const lcs: Uint32Array[] = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      lcs[i]![j] = a[i] === b[j] ? lcs[i + 1]![j + 1]! + 1 : Math.max(lcs[i + 1]![j]!, lcs[i]![j + 1]!);
    }
  }
  const out: [string, string][] = [];
  let i = 0, j = 0;
  while (i < n && j < m) {
    if (a[i] === b[j]) { out.push([" ", a[i]!]); i++; j++; }
    else if (lcs[i + 1]![j]! >= lcs[i]![j + 1]!) out.push(["-", a[i++]!]);
    else out.push(["+", b[j++]!]);
  }
  while (i < n) out.push(["-", a[i++]!]);
  while (j < m) out.push(["+", b[j++]!]);
  return out;
}

function Diff({ family, revisions }: { family: string; revisions: string[] }) {
  const [left, setLeft] = useState(revisions[1] ?? revisions[0] ?? "");
  const [right, setRight] = useState(revisions[0] ?? "");
  const { data, error } = useLoad(async () => {
    if (!left || !right) return undefined;
    const [a, b] = await Promise.all([left, right].map((r) => call(ECS, "DescribeTaskDefinition", { taskDefinition: `${family}:${r}` })));
    return lineDiff(JSON.stringify(a.taskDefinition, null, 2).split("\n"), JSON.stringify(b.taskDefinition, null, 2).split("\n"));
  }, [family, left, right]);
  return (
    <>
      <div class="toolbar">
        <Field id="diff-left" label="From revision">
          <select id="diff-left" value={left} onChange={(e) => setLeft(e.currentTarget.value)}>
            {revisions.map((r) => <option key={r} value={r}>{r}</option>)}
          </select>
        </Field>
        <Field id="diff-right" label="To revision">
          <select id="diff-right" value={right} onChange={(e) => setRight(e.currentTarget.value)}>
            {revisions.map((r) => <option key={r} value={r}>{r}</option>)}
          </select>
        </Field>
      </div>
      <ErrorBox error={error} what="DescribeTaskDefinition" />
      {data ? (
        <pre class="diff" aria-label={`Diff of revision ${left} and ${right}`}>
          {data.filter(([k], i) => k !== " " || data.slice(Math.max(0, i - 3), i + 4).some(([x]) => x !== " "))
            .map(([k, line], i) => <div key={i} class={k === "+" ? "add" : k === "-" ? "del" : ""}>{k} {line}</div>)}
          {data.every(([k]) => k === " ") ? <div>(no difference)</div> : null}
        </pre>
      ) : null}
    </>
  );
}

async function defaultVpcSubnets(): Promise<string[]> {
  const doc = await callQuery("ec2", { Action: "DescribeSubnets", Version: "2016-11-15", "Filter.1.Name": "default-for-az", "Filter.1.Value.1": "true" });
  return Array.from(doc.getElementsByTagName("subnetId")).map((e) => e.textContent ?? "").filter(Boolean);
}

function RunTask({ family, revision, td }: { family: string; revision: string; td: any }) {
  const clusters = useLoad(() => describeClusters(), []);
  const awsvpc = td?.networkMode === "awsvpc";
  const subnets = useLoad(() => awsvpc ? defaultVpcSubnets() : Promise.resolve([] as string[]), [awsvpc]);
  const [cluster, setCluster] = useState("");
  const [count, setCount] = useState("1");
  const [launchType, setLaunchType] = useState((td?.requiresCompatibilities ?? []).includes("FARGATE") ? "FARGATE" : "EC2");
  const [subnet, setSubnet] = useState("");
  const [started, setStarted] = useState<any[] | undefined>(undefined);
  const chosenCluster = cluster || clusters.data?.[0]?.clusterName || "";
  const chosenSubnet = subnet || subnets.data?.[0] || "";
  return (
    <form class="stack-form" onSubmit={(e) => e.preventDefault()}>
      <ErrorBox error={clusters.error} what="ListClusters" />
      <Field id="run-cluster" label="Cluster">
        <select id="run-cluster" value={chosenCluster} onChange={(e) => setCluster(e.currentTarget.value)}>
          {(clusters.data ?? []).map((c) => <option key={c.clusterArn} value={c.clusterName}>{c.clusterName}</option>)}
        </select>
      </Field>
      <Field id="run-count" label="Count (1–10)">
        <input id="run-count" type="number" min={1} max={10} value={count} onInput={(e) => setCount(e.currentTarget.value)} />
      </Field>
      <Field id="run-launch" label="Launch type">
        <select id="run-launch" value={launchType} onChange={(e) => setLaunchType(e.currentTarget.value)}>
          <option value="FARGATE">FARGATE</option><option value="EC2">EC2</option>
        </select>
      </Field>
      {awsvpc ? (
        <>
          <ErrorBox error={subnets.error} what="DescribeSubnets" />
          <Field id="run-subnet" label="Subnet (default VPC; no public IP)">
            <select id="run-subnet" value={chosenSubnet} onChange={(e) => setSubnet(e.currentTarget.value)}>
              {(subnets.data ?? []).map((s) => <option key={s} value={s}>{s}</option>)}
            </select>
          </Field>
        </>
      ) : null}
      <ActionButton id="run-task" label="Run task" run={async () => {
        const input: any = { cluster: chosenCluster, taskDefinition: `${family}:${revision}`, count: Number(count), launchType };
        if (awsvpc) input.networkConfiguration = { awsvpcConfiguration: { subnets: chosenSubnet ? [chosenSubnet] : [], assignPublicIp: "DISABLED" } };
        const r = await call(ECS, "RunTask", input);
        setStarted([...(r.tasks ?? []), ...(r.failures ?? []).map((f: any) => ({ failure: f }))]);
      }} />
      {started ? (
        <ul class="list" aria-label="Run task results">
          {started.map((t, i) => t.failure
            ? <li key={i}>Failure: {t.failure.reason} {t.failure.detail ?? ""}</li>
            : <li key={t.taskArn}><a href={href("clusters", chosenCluster, "tasks", arnTail(t.taskArn))}>{arnTail(t.taskArn)}</a> {t.lastStatus}</li>)}
        </ul>
      ) : null}
    </form>
  );
}

export function TaskDefinitionFamily({ family, revision }: { family: string; revision?: string }) {
  const revs = useLoad(() => callAll<string>(ECS, "ListTaskDefinitions", { familyPrefix: family, sort: "DESC", status: "ACTIVE", maxResults: 100 }, "taskDefinitionArns")
    .then((arns) => arns.filter((a) => arnTail(a).split(":")[0] === family)), [family], ["ecs"]);
  const revisions = (revs.data ?? []).map((a) => arnTail(a).split(":")[1] ?? "");
  const chosen = revision ?? revisions[0];
  const td = useLoad(async () => chosen ? (await call(ECS, "DescribeTaskDefinition", { taskDefinition: `${family}:${chosen}`, include: ["TAGS"] })).taskDefinition : undefined,
    [family, chosen]);
  return (
    <section>
      <p class="crumbs"><a href={href("taskdefs")}>Task definitions</a> /</p>
      <h1>Task definition {family}</h1>
      <ErrorBox error={revs.error} what="ListTaskDefinitions" />
      <Loading loading={revs.loading && !revs.data} />
      {revs.data && !revisions.length ? <Empty>No active revisions.</Empty> : null}
      <h2>Active revisions</h2>
      <ul class="list inline">
        {revisions.map((r) => (
          <li key={r}><a href={href("taskdefs", family, r)} aria-current={r === chosen ? "page" : undefined}>{family}:{r}</a></li>
        ))}
      </ul>
      {chosen ? (
        <>
          <h2>Revision {chosen}</h2>
          <ErrorBox error={td.error} what="DescribeTaskDefinition" />
          <div class="actions">
            <ActionButton id="deregister" label="Deregister revision" danger confirm={`Deregister ${family}:${chosen}?`}
              onDone={() => { location.hash = href("taskdefs", family); revs.reload(); }}
              run={() => call(ECS, "DeregisterTaskDefinition", { taskDefinition: `${family}:${chosen}` })} />
          </div>
          <details>
            <summary>Run a task from {family}:{chosen}</summary>
            {td.data ? <RunTask family={family} revision={chosen} td={td.data} /> : null}
          </details>
          {revisions.length > 1 ? (
            <details>
              <summary>Compare two revisions</summary>
              <Diff family={family} revisions={revisions} />
            </details>
          ) : null}
          <h3>JSON</h3>
          {td.data ? <Json value={td.data} /> : null}
        </>
      ) : null}
    </section>
  );
}
