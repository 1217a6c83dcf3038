// Formatting helpers: times, ARNs, sizes. Every value a view shows goes through Preact as text.

/** ECS and the other JSON services give times as epoch seconds (numbers); deploy and XML as ISO text. */
export function toDate(v: unknown): Date | undefined {
  if (v === undefined || v === null || v === "") return undefined;
  if (typeof v === "number") return new Date(v > 1e11 ? v : v * 1000);
  const d = new Date(String(v));
  return isNaN(d.getTime()) ? undefined : d;
}

export function time(v: unknown): string {
  const d = toDate(v);
  if (!d) return "";
  return d.toISOString().replace("T", " ").replace(/\.\d{3}Z$/, "Z");
}

export function ago(v: unknown, now = Date.now()): string {
  const d = toDate(v);
  if (!d) return "";
  const s = Math.round((now - d.getTime()) / 1000);
  if (s < 0) return "in " + span(-s);
  return span(s) + " ago";
}

export function span(s: number): string {
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
  return `${Math.floor(s / 86400)}d ${Math.floor((s % 86400) / 3600)}h`;
}

/** The last part of an ARN after "/" (a task id, a service name). */
export function arnTail(arn: string | undefined): string {
  if (!arn) return "";
  return arn.slice(arn.lastIndexOf("/") + 1);
}

/** "family:3" from a task definition ARN. */
export function tdName(arn: string | undefined): string {
  return arnTail(arn);
}

export function bytes(n: number | undefined): string {
  if (n === undefined || n === null) return "";
  const units = ["B", "KB", "MB", "GB", "TB"];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return `${v.toFixed(i ? 1 : 0)} ${units[i]}`;
}

export function errorText(e: unknown): string {
  if (e === undefined || e === null) return "";
  return String(e);
}
