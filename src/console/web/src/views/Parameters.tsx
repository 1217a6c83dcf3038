// SSM parameters (DescribeParameters): values hidden until asked (GetParameter); a SecureString is
// decrypted only on an explicit click (GetParameter WithDecryption).
import { useState } from "preact/hooks";
import { call, callAll, SSM } from "../lib/api";
import { time } from "../lib/format";
import { useLoad } from "../lib/hooks";
import { Empty, ErrorBox, Loading, TableWrap } from "../lib/ui";

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
      {data && !data.length ? <Empty>No parameters.</Empty> : null}
      {data?.length ? (
        <TableWrap label="Parameters">
          <table>
            <thead><tr><th scope="col">Name</th><th scope="col">Type</th><th scope="col">Version</th><th scope="col">Modified</th><th scope="col">Value</th></tr></thead>
            <tbody>
              {data.map((p) => (
                <tr key={p.Name}>
                  <th scope="row">{p.Name}</th><td>{p.Type}</td><td>{p.Version}</td><td>{time(p.LastModifiedDate)}</td>
                  <td><Value key={p.Name + p.Version} name={p.Name} type={p.Type} /></td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      ) : null}
    </section>
  );
}
