// Development only: serves dist/ at /console, /console/, /console/app.js and /console/app.css and
// forwards every other request (the API) to a running Paddock, so the console can be tried against a
// server whose binary does not embed it yet.
//   node dev-proxy.mjs --listen 127.0.0.1:8090 --upstream http://127.0.0.1:4566
// It prints "dev-proxy listening on http://HOST:PORT" once it listens (port 0 picks one).
import { readFileSync } from "node:fs";
import { createServer, request } from "node:http";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const args = process.argv.slice(2);
const opt = (name, dflt) => { const i = args.indexOf(name); return i >= 0 ? args[i + 1] : dflt; };
const [host, port] = opt("--listen", "127.0.0.1:0").split(":");
const upstream = new URL(opt("--upstream", "http://127.0.0.1:4566"));
const dist = opt("--dist", join(dirname(fileURLToPath(import.meta.url)), "dist"));
const CSP = "default-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
const FILES = {
  "/console": ["index.html", "text/html; charset=utf-8"],
  "/console/": ["index.html", "text/html; charset=utf-8"],
  "/console/app.js": ["app.js", "text/javascript; charset=utf-8"],
  "/console/app.css": ["app.css", "text/css; charset=utf-8"],
};

createServer((req, res) => {
  const file = FILES[req.url.split("?")[0]];
  if (file && (req.method === "GET" || req.method === "HEAD")) {
    res.writeHead(200, { "Content-Type": file[1], "Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff" });
    res.end(req.method === "HEAD" ? undefined : readFileSync(join(dist, file[0])));
    return;
  }
  // Keep the Host the browser signed: the server checks the signature against it.
  const up = request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url,
    headers: req.headers }, (r) => { res.writeHead(r.statusCode, r.headers); r.pipe(res); });
  up.on("error", (e) => { res.writeHead(502); res.end(String(e)); });
  req.pipe(up);
}).listen(Number(port), host, function () {
  console.log(`dev-proxy listening on http://${host}:${this.address().port}`);
});
