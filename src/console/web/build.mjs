// Builds the console into dist/: index.html, app.js (one minified bundle) and app.css — the three
// files src/console/CMakeLists.txt embeds into the paddock binary. `node build.mjs` (npm run build
// type-checks first).
import { build } from "esbuild";
import { copyFileSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const out = process.env.PADDOCK_CONSOLE_OUT || join(here, "dist");
mkdirSync(out, { recursive: true });
await build({
  entryPoints: [join(here, "src/main.tsx")],
  bundle: true,
  minify: true,
  format: "esm",
  target: ["es2022"],
  outfile: join(out, "app.js"),
  jsx: "automatic",
  jsxImportSource: "preact",
  legalComments: "none",
  logLevel: "warning",
});
copyFileSync(join(here, "index.html"), join(out, "index.html"));
copyFileSync(join(here, "app.css"), join(out, "app.css"));
