// The images in the node's store (PaddockConsole ListImages).
import { call, CONSOLE } from "../lib/api";
import { bytes, time } from "../lib/format";
import { useLoad } from "../lib/hooks";
import { Empty, ErrorBox, Loading, TableWrap } from "../lib/ui";

export function Images() {
  const { data, error, loading } = useLoad(() => call(CONSOLE, "ListImages", {}).then((r) => (r.images ?? []) as any[]), []);
  return (
    <section>
      <h1>Images</h1>
      <ErrorBox error={error} what="ListImages" />
      <Loading loading={loading && !data} />
      {data && !data.length ? <Empty>No images.</Empty> : null}
      {data?.length ? (
        <TableWrap label="Images">
          <table>
            <thead><tr><th scope="col">Reference</th><th scope="col">Manifest digest</th><th scope="col">Size</th><th scope="col">Created</th></tr></thead>
            <tbody>
              {data.map((i) => (
                <tr key={i.reference + i.manifestDigest}><th scope="row">{i.reference}</th><td class="mono">{i.manifestDigest}</td><td>{bytes(i.size)}</td><td>{time(i.createdAt)}</td></tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      ) : null}
    </section>
  );
}
