"""The edge's dashboard in a real browser (issue 14): `paddock edge` with Traefik's file provider routes to
local backends, and headless Chromium (Debian's `chromium`) renders http://127.0.0.1:<api>/dashboard/: the
routers with their rules, statuses and errors, the service's servers UP, DOWN and pending their first
probe, and a router whose name and rule are markup (`<img onerror>`, `<script>`, as a hostile tenant's
labels can be) shown as text, never as elements. A second case serves the same page beside a canned
API (drains in progress, a weighted service, routers on two pages) to check what a bare edge cannot
show. / redirects to /dashboard/ as Traefik's does.

Needs chromium (skipped without it: scripts/setup installs it); no root, no containers, no ECS tasks
(the edge's ECS endpoint is a stub that lists none)."""

import html.parser
import http.client
import http.server
import json
import os
import queue
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paddock_harness as h  # noqa: E402

HOSTILE_NAME = "<img src=x onerror=\"document.title='pwned'\">"
HOSTILE_RULE = "Host(`<script>document.title='pwned'</script>.localhost`)"


def chromium():
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


class Quiet(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def answer(self, status, body, content_type="text/plain", headers=()):
        data = body if isinstance(body, bytes) else body.encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)


class Backend(Quiet):
    """/health answers the server's `healthy` (200) or not (500); anything else 200."""
    healthy = True

    def do_GET(self):
        if self.path == "/health" and not self.server.healthy:
            self.answer(500, "sick\n")
        else:
            self.answer(200, "ok\n")


class EcsStub(Quiet):
    """The ECS API with no tasks: every action answers an empty list."""

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.answer(200, json.dumps({"clusterArns": [], "taskArns": [], "tasks": [], "failures": []}),
                    "application/x-amz-json-1.1")


def serve(handler, **attrs):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    for k, v in attrs.items():
        setattr(server, k, v)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def stop(server):
    server.shutdown()
    server.server_close()


class Dom(html.parser.HTMLParser):
    """What the test reads of a dumped DOM: every element's tag and attributes, the text of each
    table's rows by section id, and each server entry's text."""

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.elements = []  # (tag, attrs)
        self.rows = {}  # section div id -> [[cell text]]
        self.servers = []  # text of each li.server
        self.texts = []  # every text node
        self.section = None
        self.cells = None
        self.cell = None
        self.server = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.elements.append((tag, a))
        if tag == "div" and a.get("id") in ("overview", "routers", "services", "middlewares", "drains"):
            self.section = a["id"]
        elif tag == "tr" and self.section:
            self.cells = []
        elif tag == "td" and self.cells is not None:
            self.cell = []
        elif tag == "li" and a.get("class") == "server":
            self.server = []
        if tag == "li" and self.cell is not None:
            self.cell.append(" ")

    def handle_endtag(self, tag):
        if tag == "td" and self.cell is not None:
            self.cells.append(" ".join("".join(self.cell).split()))
            self.cell = None
        elif tag == "tr" and self.cells is not None:
            if self.cells:
                self.rows.setdefault(self.section, []).append(self.cells)
            self.cells = None
        elif tag == "li" and self.server is not None:
            self.servers.append(" ".join("".join(self.server).split()))
            self.server = None
        elif tag == "section":
            self.section = None

    def handle_data(self, data):
        self.texts.append(data)
        if self.cell is not None:
            self.cell.append(data)
        if self.server is not None:
            self.server.append(data)

    def tags(self, tag):
        return [a for t, a in self.elements if t == tag]

    def row(self, section, first):
        for cells in self.rows.get(section, []):
            if cells and cells[0] == first:
                return cells
        raise AssertionError(f"no row {first!r} in {section}: {self.rows.get(section)}")


@unittest.skipUnless(chromium(), "chromium is not installed (scripts/setup installs Debian's chromium)")
class Dashboard(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="paddock-dashboard-")
        cls.addClassCleanup(shutil.rmtree, cls.tmp, ignore_errors=True)
        cls.healthy = serve(Backend, healthy=True)
        cls.sick = serve(Backend, healthy=False)
        cls.ecs = serve(EcsStub)
        for s in (cls.healthy, cls.sick, cls.ecs):
            cls.addClassCleanup(stop, s)
        # Accepts connections (the kernel's backlog) and never answers: its first probe stays pending.
        cls.silent = socket.socket()
        cls.silent.bind(("127.0.0.1", 0))
        cls.silent.listen(8)
        cls.addClassCleanup(cls.silent.close)
        url = lambda port: f"http://127.0.0.1:{port}"  # noqa: E731
        cls.up_url = url(cls.healthy.server_address[1])
        cls.down_url = url(cls.sick.server_address[1])
        cls.pending_url = url(cls.silent.getsockname()[1])
        config = {"http": {
            "routers": {
                "shop": {"rule": "Host(`shop.localhost`) && PathPrefix(`/cart`)", "service": "shop",
                         "middlewares": ["strip"]},
                HOSTILE_NAME: {"rule": HOSTILE_RULE, "service": "shop"},
                "broken": {"rule": "Host(`broken.localhost`)", "service": "nowhere"},
            },
            "middlewares": {"strip": {"stripPrefix": {"prefixes": ["/cart"]}}},
            "services": {
                "shop": {"loadBalancer": {
                    "servers": [{"url": cls.up_url}, {"url": cls.down_url}, {"url": cls.pending_url}],
                    "healthCheck": {"path": "/health", "interval": "60s", "timeout": "60s"}}},
            },
        }}
        # JSON is YAML: the file provider reads it as Traefik's YAML decoder does.
        cls.config_path = os.path.join(cls.tmp, "dynamic.yml")
        with open(cls.config_path, "w") as f:
            json.dump(config, f)
        env = dict(os.environ, AWS_ACCESS_KEY_ID="AKIDDASHBOARDTEST", AWS_SECRET_ACCESS_KEY="dashboard-test-secret")
        cls.edge = subprocess.Popen(
            [h.paddock_bin(), "edge", f"--endpoint=http://127.0.0.1:{cls.ecs.server_address[1]}",
             "--entrypoint", "web=127.0.0.1:0", "--api", "127.0.0.1:0",
             f"--providers.file.filename={cls.config_path}"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        cls.addClassCleanup(cls.stop_edge)
        cls.log = []
        lines = queue.Queue()

        def pump():
            for line in cls.edge.stdout:
                cls.log.append(line)
                lines.put(line)
            lines.put(None)

        threading.Thread(target=pump, daemon=True).start()
        cls.api_port = None
        deadline = time.monotonic() + 20
        while cls.api_port is None:
            try:
                line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                line = None
            if line is None or time.monotonic() > deadline:
                raise AssertionError(f"paddock edge did not start: {''.join(cls.log)}")
            prefix = "paddock edge: API on http://127.0.0.1:"
            if line.startswith(prefix):
                cls.api_port = int(line[len(prefix):].split("/", 1)[0])

    @classmethod
    def stop_edge(cls):
        cls.edge.terminate()
        try:
            cls.edge.wait(timeout=10)
        except subprocess.TimeoutExpired:
            cls.edge.kill()
            cls.edge.wait()
        cls.edge.stdout.close()

    def get(self, path, port=None):
        conn = http.client.HTTPConnection("127.0.0.1", port or self.api_port, timeout=10)
        try:
            conn.request("GET", path)
            r = conn.getresponse()
            return r.status, dict(r.getheaders()), r.read()
        finally:
            conn.close()

    def render(self, url):
        """The DOM headless Chromium has once the page's first reads are done (virtual time)."""
        profile = tempfile.mkdtemp(prefix="chromium-", dir=self.tmp)
        run = subprocess.run(
            [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             "--no-first-run", "--disable-extensions", f"--user-data-dir={profile}",
             "--virtual-time-budget=5000", "--dump-dom", url],
            capture_output=True, text=True, timeout=120)
        self.assertEqual(run.returncode, 0, run.stderr[-3000:])
        self.assertIn('data-state="ready"', run.stdout,
                      f"the page did not finish its reads:\n{run.stdout}\n{run.stderr[-3000:]}")
        return run.stdout

    def await_health(self):
        """Until the edge has probed the two servers that answer: UP and DOWN (the silent one stays pending)."""
        deadline = time.monotonic() + 30
        while True:
            status, _, body = self.get("/api/http/services/shop@file")
            if status == 200:
                server_status = json.loads(body).get("serverStatus", {})
                if server_status == {self.up_url: "UP", self.down_url: "DOWN"}:
                    return
            self.assertLess(time.monotonic(), deadline, f"{status} {body!r} {''.join(self.log)}")
            time.sleep(0.1)

    def test_shows_routers_services_and_each_servers_health_and_markup_in_names_as_text(self):
        self.await_health()
        text = self.render(f"http://127.0.0.1:{self.api_port}/dashboard/")
        dom = Dom(text)

        # Routers: name, rule, entry points, service, middlewares, status, errors.
        self.assertEqual(dom.row("routers", "shop@file"),
                         ["shop@file", "Host(`shop.localhost`) && PathPrefix(`/cart`)", "web", "shop", "strip@file",
                          "enabled", "-"])
        broken = dom.row("routers", "broken@file")
        self.assertEqual(broken[5], "disabled")
        self.assertIn("nowhere@file", broken[6])
        hostile = dom.row("routers", HOSTILE_NAME + "@file")
        self.assertEqual(hostile[1], HOSTILE_RULE)
        self.assertEqual(len(dom.rows["routers"]), 3)

        # The service and each server's health.
        shop = dom.row("services", "shop@file")
        self.assertEqual((shop[1], shop[2]), ("loadbalancer", "enabled"))
        self.assertEqual(sorted(dom.servers), sorted([f"{self.up_url} UP", f"{self.down_url} DOWN",
                                                      f"{self.pending_url} pending first probe"]))
        self.assertEqual(dom.row("middlewares", "strip@file")[1:4], ["stripprefix", "enabled", "shop@file"])
        self.assertEqual([t.strip() for t in dom.texts if "drains in progress" in t.lower()],
                         ["Drains in progress", "No drains in progress."])

        # The tenant's markup is text: no element came of it, and its script never ran.
        self.assertEqual(dom.tags("img"), [])
        self.assertEqual(dom.tags("script"), [{"src": "/dashboard/app.js", "defer": ""}])
        self.assertEqual(re.search(r"<title>(.*?)</title>", text).group(1), "Paddock edge")
        self.assertIn("&lt;img src=x onerror=", text)

    def test_the_root_redirects_to_the_dashboard_and_the_page_is_served_with_its_policy(self):
        status, headers, _ = self.get("/")
        self.assertEqual((status, headers.get("Location")), (301, f"http://127.0.0.1:{self.api_port}/dashboard/"))
        status, headers, body = self.get("/dashboard/")
        self.assertEqual((status, headers.get("Content-Type")), (200, "text/html; charset=utf-8"))
        self.assertIn("script-src 'self';", headers.get("Content-Security-Policy", ""))
        self.assertEqual(headers.get("X-Content-Type-Options"), "nosniff")
        status, headers, _ = self.get("/dashboard/app.js")
        self.assertEqual((status, headers.get("Content-Type")), (200, "text/javascript; charset=utf-8"))

    def test_drains_weighted_services_and_paged_lists_from_a_canned_api(self):
        """The same page and script (read from the edge) beside canned API answers: what a bare edge
        has none of — drains in progress, a weighted service — and routers on two pages."""
        assets = {path: self.get(path) for path in ("/dashboard/", "/dashboard/app.js", "/dashboard/app.css")}
        for path, (status, _, _) in assets.items():
            self.assertEqual(status, 200, path)
        router = lambda name: {"name": name, "rule": f"Host(`{name}.localhost`)", "entryPoints": ["web"],  # noqa: E731
                               "using": ["web"], "service": "w", "status": "enabled", "provider": "file"}
        pages = {"1": ([router("first")], "2"), "2": ([router("second")], "1")}
        api = {
            "/api/overview": {"http": {"routers": {"total": 2, "warnings": 0, "errors": 0},
                                       "services": {"total": 1, "warnings": 0, "errors": 0},
                                       "middlewares": {"total": 0, "warnings": 0, "errors": 0}},
                              "providers": ["File"]},
            "/api/http/services": [{"name": "w@file", "type": "weighted", "status": "enabled",
                                    "weighted": {"services": [{"name": "a@file", "weight": 3}, {"name": "b@file"}]}}],
            "/api/http/middlewares": [],
            "/api/paddock/drains": [{"taskArn": "arn:aws:ecs:us-east-1:000000000000:task/default/<b>t1</b>",
                                     "url": "http://10.0.0.7:8080", "inFlight": 2,
                                     "since": "2026-12-03T08:00:00Z", "deadline": "2026-12-03T08:00:30Z"}],
        }

        class Canned(Quiet):
            def do_GET(self):
                path, _, query = self.path.partition("?")
                if path in assets:
                    status, headers, body = assets[path]
                    self.answer(status, body, headers["Content-Type"],
                                [("Content-Security-Policy", headers["Content-Security-Policy"])])
                elif path == "/api/http/routers":
                    params = dict(p.split("=", 1) for p in query.split("&") if "=" in p)
                    items, following = pages[params.get("page", "1")]
                    self.answer(200, json.dumps(items), "application/json", [("X-Next-Page", following)])
                elif path in api:
                    self.answer(200, json.dumps(api[path]), "application/json", [("X-Next-Page", "1")])
                else:
                    self.answer(404, "404 page not found\n")

        canned = serve(Canned)
        self.addCleanup(stop, canned)
        dom = Dom(self.render(f"http://127.0.0.1:{canned.server_address[1]}/dashboard/"))
        self.assertEqual([r[0] for r in dom.rows["routers"]], ["first", "second"])
        self.assertEqual(dom.row("services", "w@file")[1:4], ["weighted", "enabled", "a@file (weight 3) b@file"])
        drain = dom.row("drains", "arn:aws:ecs:us-east-1:000000000000:task/default/<b>t1</b>")
        self.assertEqual(drain[1:4], ["http://10.0.0.7:8080", "2", "2026-12-03T08:00:00Z"])
        self.assertTrue(drain[4].startswith("2026-12-03T08:00:30Z ("), drain)
        self.assertEqual(dom.tags("b"), [])


if __name__ == "__main__":
    unittest.main()
