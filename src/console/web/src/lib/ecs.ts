// ECS reads the views share: whole listings described in batches, concurrently.
import { call, callAll, ECS } from "./api";

export async function describeClusters(names?: string[]): Promise<any[]> {
  const arns = names ?? await callAll<string>(ECS, "ListClusters", {}, "clusterArns");
  const batches: Promise<any>[] = [];
  for (let i = 0; i < arns.length; i += 100) {
    batches.push(call(ECS, "DescribeClusters", { clusters: arns.slice(i, i + 100), include: ["STATISTICS"] }));
  }
  return (await Promise.all(batches)).flatMap((r) => r.clusters ?? []);
}

export async function describeServices(cluster: string, names?: string[]): Promise<any[]> {
  const arns = names ?? await callAll<string>(ECS, "ListServices", { cluster, maxResults: 100 }, "serviceArns");
  const batches: Promise<any>[] = [];
  for (let i = 0; i < arns.length; i += 10) {
    batches.push(call(ECS, "DescribeServices", { cluster, services: arns.slice(i, i + 10) }));
  }
  return (await Promise.all(batches)).flatMap((r) => r.services ?? []);
}

export async function describeContainerInstances(cluster: string): Promise<any[]> {
  const arns = await callAll<string>(ECS, "ListContainerInstances", { cluster, maxResults: 100 }, "containerInstanceArns");
  const batches: Promise<any>[] = [];
  for (let i = 0; i < arns.length; i += 100) {
    batches.push(call(ECS, "DescribeContainerInstances", { cluster, containerInstances: arns.slice(i, i + 100) }));
  }
  return (await Promise.all(batches)).flatMap((r) => r.containerInstances ?? []);
}

/** Every task ListTasks gives for `filter`, described 100 at a time as each page arrives, concurrently;
 * the very first page is described in two calls (its first 20 tasks alone) so the first rows come
 * back sooner. `onPage` sees the tasks described so far (in listing order) each time an answer lands. */
export async function describeTasksPaged(cluster: string, filter: object, onPage?: (tasks: any[]) => void,
                                         max = 5000): Promise<any[]> {
  const slots: (any[] | undefined)[] = [];
  const pending: Promise<void>[] = [];
  let nextToken: string | undefined;
  let listed = 0;
  const flat = () => {
    const out: any[] = [];
    for (const s of slots) {
      if (!s) break; // keep listing order: show a slot only once those before it are in
      out.push(...s);
    }
    return out;
  };
  const describe = (arns: string[]) => {
    const slot = slots.length;
    slots.push(undefined);
    pending.push(call(ECS, "DescribeTasks", { cluster, tasks: arns }).then((r) => {
      slots[slot] = r.tasks ?? [];
      if (slot === 0) performance.mark("tasks-first-describe");
      onPage?.(flat());
    }));
  };
  do {
    const page: any = await call(ECS, "ListTasks", { cluster, maxResults: 100, ...filter, ...(nextToken ? { nextToken } : {}) });
    const arns: string[] = page.taskArns ?? [];
    nextToken = page.nextToken;
    if (listed === 0) performance.mark("tasks-first-list");
    if (listed === 0 && arns.length > 20) {
      describe(arns.slice(0, 20));
      describe(arns.slice(20));
    } else if (arns.length) {
      describe(arns);
    }
    listed += arns.length;
  } while (nextToken && listed < max);
  await Promise.all(pending);
  return flat();
}

/** A task's private IPv4 address: its ENI's (awsvpc) or a container's network interface's. */
export function taskIp(task: any): string {
  for (const a of task.attachments ?? []) {
    for (const d of a.details ?? []) if (d.name === "privateIPv4Address") return d.value;
  }
  for (const c of task.containers ?? []) {
    for (const n of c.networkInterfaces ?? []) if (n.privateIpv4Address) return n.privateIpv4Address;
  }
  return "";
}

/** "8080→32768/tcp" for each network binding. */
export function taskPorts(task: any): string {
  const out: string[] = [];
  for (const c of task.containers ?? []) {
    for (const b of c.networkBindings ?? []) {
      out.push(b.hostPort && b.hostPort !== b.containerPort ? `${b.containerPort}→${b.hostPort}/${b.protocol ?? "tcp"}`
        : `${b.containerPort}/${b.protocol ?? "tcp"}`);
    }
  }
  return out.join(", ");
}

export function resource(list: any[] | undefined, name: string): number | undefined {
  const r = (list ?? []).find((x) => x.name === name);
  return r ? r.integerValue ?? r.doubleValue ?? r.longValue : undefined;
}
