// SSM parameters (DescribeParameters): values hidden until asked (GetParameter); a SecureString is
// decrypted only on an explicit click (GetParameter WithDecryption).
import { useState } from "preact/hooks";
import { call, callAll, SSM } from "../lib/api";
import { time } from "../lib/format";
import { useLoad } from "../lib/hooks";
import { DataTable, ErrorBox, Loading } from "../lib/ui";

function Value({ name, type }: { name: string; type: string }) {
  const [value, setValue] = useState<string | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const get = async (decrypt: boolean) => {
    setError(undefined);
    try {
      const r = await call(SSM, "GetParameter", { Name: name, WithDecryption: decrypt });
      setValue(r.Parameter?.Value ?? "");
    } catch (e) {
      setError(e);
    }
  };
  if (value !== undefined) {
    return <span><code class="value">{value}</code> <button type="button" onClick={() => setValue(undefined)}>Hide</button></span>;
  }
  return (
    <span>
      {type === "SecureString"
        ? <button type="button" onClick={() => get(true)} aria-label={`Decrypt ${name}`}>Decrypt and show</button>
        : <button type="button" onClick={() => get(false)} aria-label={`Show ${name}`}>Show</button>}
      <ErrorBox error={error} what="GetParameter" />
    </span>
  );
}

export function Parameters() {
  const { data, error, loading } = useLoad(() => callAll<any>(SSM, "DescribeParameters", { MaxResults: 50 }, "Parameters", "NextToken"), [], ["ssm"]);
  return (
    <section>
      <h1>Parameters</h1>
      <ErrorBox error={error} what="DescribeParameters" />
      <Loading loading={loading && !data} />
      <DataTable label="Parameters" rows={data} rowKey={(p) => p.Name} empty="No parameters."
        columns={["Name", "Type", "Version", "Modified", "Value"]}
        cells={(p) => [p.Name, p.Type, p.Version, time(p.LastModifiedDate),
          <Value key={p.Name + p.Version} name={p.Name} type={p.Type} />]} />
    </section>
  );
}
