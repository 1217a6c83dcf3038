// The console's signer and event-stream decoder, run in node on cases from tests/test_console.py
// (which computes the expected answers with botocore and builds the frames itself):
//   echo '{"sign": [...], "frames": [...], "diff": [...]}' | node unit.mjs
// stdin: {"sign": [{"method", "host", "path", "query", "headers", "body", "creds", "region", "service",
//          "when"}], "frames": [{"chunks": ["<hex>", ...]}]}
// stdout: {"sign": [<headers the signer gives>], "frames": [[{"headers", "payload"}] or {"error"}]}
// The TypeScript sources are bundled with the console's own esbuild, so what runs is what ships.
import { mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const web = join(dirname(fileURLToPath(import.meta.url)), "../../src/console/web");
const esbuild = createRequire(join(web, "package.json"))("esbuild");
const out = mkdtempSync(join(tmpdir(), "console-unit-"));
try {
  for (const name of ["sigv4", "eventstream"]) {
    await esbuild.build({ entryPoints: [join(web, `src/lib/${name}.ts`)], bundle: true, format: "esm",
      platform: "neutral", outfile: join(out, `${name}.mjs`), logLevel: "warning" });
  }
  const { signRequest } = await import(pathToFileURL(join(out, "sigv4.mjs")).href);
  const { EventStreamDecoder } = await import(pathToFileURL(join(out, "eventstream.mjs")).href);

  let input = "";
  for await (const chunk of process.stdin) input += chunk;
  const cases = JSON.parse(input);
  const result = { sign: [], frames: [] };
  for (const c of cases.sign ?? []) {
    result.sign.push(signRequest({ method: c.method, host: c.host, path: c.path, query: c.query ?? "",
      headers: c.headers, body: c.body }, c.creds, c.region, c.service, new Date(c.when)));
  }
  for (const f of cases.frames ?? []) {
    const dec = new EventStreamDecoder();
    try {
      const messages = [];
      for (const hex of f.chunks) messages.push(...dec.push(Uint8Array.from(Buffer.from(hex, "hex"))));
      result.frames.push(messages.map((m) => ({ headers: m.headers, payload: new TextDecoder().decode(m.payload) })));
    } catch (e) {
      result.frames.push({ error: String(e.message ?? e) });
    }
  }
  process.stdout.write(JSON.stringify(result));
} finally {
  rmSync(out, { recursive: true, force: true });
}
