// The images in the node's store (PaddockConsole ListImages).
import { call, CONSOLE } from "../lib/api";
import { bytes, time } from "../lib/format";
import { useLoad } from "../lib/hooks";
import { DataTable, ErrorBox, Loading } from "../lib/ui";

export function Images() {
  const { data, error, loading } = useLoad(() => call(CONSOLE, "ListImages", {}).then((r) => (r.images ?? []) as any[]), []);
  return (
    <section>
      <h1>Images</h1>
      <ErrorBox error={error} what="ListImages" />
      <Loading loading={loading && !data} />
      <DataTable label="Images" rows={data} rowKey={(i) => i.reference + i.manifestDigest} empty="No images."
        columns={["Reference", "Manifest digest", "Size", "Created"]}
        cells={(i) => [i.reference, <span class="mono">{i.manifestDigest}</span>, bytes(i.size), time(i.createdAt)]} />
    </section>
  );
}
