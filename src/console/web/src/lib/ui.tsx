// Shared pieces of the views. Tenant data is rendered only as text children (never as markup).
import type { ComponentChildren } from "preact";
import { useState } from "preact/hooks";
import { ApiError } from "./api";

export function ErrorBox({ error, what }: { error: unknown; what?: string }) {
  if (error === undefined || error === null) return null;
  const code = error instanceof ApiError ? error.code : "Error";
  const message = error instanceof ApiError ? error.message : String(error);
  return (
    <div class="error" role="alert">
      {what ? <span>{what} failed: </span> : null}
      <strong class="error-code">{code}</strong>
      {message ? <span class="error-message">: {message}</span> : null}
    </div>
  );
}

export function Loading({ loading }: { loading: boolean }) {
  return loading ? <p class="muted" aria-live="polite">Loading…</p> : null;
}

/** A table that scrolls sideways inside its own box on a narrow screen. */
export function TableWrap({ label, children }: { label: string; children: ComponentChildren }) {
  return <div class="table-wrap" role="region" aria-label={label} tabIndex={0}>{children}</div>;
}

export function Status({ value }: { value: string | undefined }) {
  const v = value ?? "";
  const tone = /^(ACTIVE|RUNNING|COMPLETED|HEALTHY|Healthy|UP|PRIMARY|enabled|true)$/.test(v) ? "good"
    : /^(FAILED|STOPPED|UNHEALTHY|Unhealthy|Failed|DOWN|INACTIVE|DRAINING|disabled)$/.test(v) ? "bad"
    : /^(IN_PROGRESS|PENDING|PROVISIONING|ACTIVATING|DEACTIVATING|STOPPING|Pending|Deploying|UNKNOWN)$/.test(v) ? "warn"
    : "plain";
  return <span class={`status status-${tone}`}>{v}</span>;
}

export function Progress({ value, max, label }: { value: number; max: number; label: string }) {
  return (
    <span class="progress">
      <progress value={Math.min(value, max)} max={Math.max(max, 1)} aria-label={label} />
      <span class="progress-text">{value}/{max}</span>
    </span>
  );
}

/** A button that runs an action, shows its error, and (when `confirm` is given) asks first. */
export function ActionButton({ label, confirm, run, danger, onDone, id }: {
  label: string; confirm?: string; run: () => Promise<unknown>; danger?: boolean; onDone?: () => void; id?: string;
}) {
  const [asking, setAsking] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(undefined);
  const go = async () => {
    setAsking(false);
    setBusy(true);
    setError(undefined);
    try {
      await run();
      onDone?.();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return (
    <span class="action">
      {asking ? (
        <span class="confirm" role="group" aria-label={`Confirm ${label}`}>
          <span>{confirm}</span>{" "}
          <button type="button" class={danger ? "danger" : "primary"} onClick={go}>Confirm</button>{" "}
          <button type="button" onClick={() => setAsking(false)}>Cancel</button>
        </span>
      ) : (
        <button type="button" id={id} class={danger ? "danger" : ""} disabled={busy}
          onClick={() => (confirm ? setAsking(true) : go())}>{busy ? `${label}…` : label}</button>
      )}
      <ErrorBox error={error} what={label} />
    </span>
  );
}

export function Field({ id, label, children }: { id: string; label: string; children: ComponentChildren }) {
  return <div class="field"><label for={id}>{label}</label>{children}</div>;
}

export function Json({ value }: { value: unknown }) {
  return <pre class="json">{JSON.stringify(value, null, 2)}</pre>;
}

export function Empty({ children }: { children: ComponentChildren }) {
  return <p class="muted">{children}</p>;
}

/** A table of `rows` inside a TableWrap: a header row of `columns`, then one row per item whose first
 * cell is its row header; `empty` (when given) stands in for a table without rows. */
export function DataTable<T>({ label, id, columns, rows, rowKey, cells, rowAttrs, empty }: {
  label: string; id?: string; columns: string[]; rows: T[] | undefined; rowKey: (row: T) => string;
  cells: (row: T) => ComponentChildren[]; rowAttrs?: (row: T) => Record<string, string | undefined>;
  empty?: string;
}) {
  if (!rows) return null;
  if (!rows.length) return empty ? <Empty>{empty}</Empty> : null;
  return (
    <TableWrap label={label}>
      <table id={id}>
        <thead><tr>{columns.map((c) => <th key={c} scope="col">{c}</th>)}</tr></thead>
        <tbody>
          {rows.map((r) => {
            const [first, ...rest] = cells(r);
            return (
              <tr key={rowKey(r)} {...(rowAttrs?.(r) ?? {})}>
                <th scope="row">{first}</th>
                {rest.map((c, i) => <td key={i}>{c}</td>)}
              </tr>
            );
          })}
        </tbody>
      </table>
    </TableWrap>
  );
}
