#!/usr/bin/env python3
"""The edge against nginx and haproxy (issue 14 §4, research note edge-traefik.md §5): the same
backend behind each of three proxies, side by side in one run, driven by the same wrk.

- Backend: nginx (Debian's nginx-light), one worker, `return 200 "ok"`, on loopback.
- forwardAuth: a second router of the edge (`/authed`) with a forwardAuth middleware whose server
  is another nginx (`return 204`); measured in every round beside the plain route.
- nginx as a proxy: one worker, upstream keepalive 64, HTTP/1.1 upstream.
- haproxy: nbthread 1, `http-reuse always`.
- The edge: `paddock edge --io-threads 1`, its ecs provider reading a one-task cluster from a small
  ECS endpoint this script serves (ListTasks / DescribeTasks / DescribeTaskDefinition answers whose
  one task points at the backend), so the edge routes by a real `traefik.*` label set.

Each round runs wrk (`-t1 -c<connections> -d<duration> --latency`) against each proxy, the order
rotating per round; the table gives each proxy's mean req/s and worst p99 over the rounds, the
proxy's own CPU time per request (user and system, from /proc: all its threads and worker
processes; steadier than req/s, which the three busy processes sharing two cores make noisy), the
backend's and wrk's CPU time per request behind that proxy (the rest of what the two cores spend on
a request: a proxy that makes its peers work harder is slower for it), and the edge's ratios to the
others. Any non-2xx answer or socket error fails the run. Bars (issue 14):
edge req/s >= 1.0x the faster of nginx and haproxy, edge p99 <= the worse of the two.

    python3 bench/edge_bench.py [--rounds 3] [--duration 5s] [--connections 16] [--connections 200]
    python3 bench/edge_bench.py --serve 120   # only set up and print the ports and pids, to profile by hand
    python3 bench/edge_bench.py --instructions   # user-space instructions per request, edge and haproxy

    python3 bench/edge_bench.py --forwarded-headers   # nginx and haproxy forward the edge's X-Forwarded-* too
    python3 bench/edge_bench.py --syscalls   # system calls per request of each proxy, by kind (perf)

--syscalls first prints what a system call costs here (`perf bench syscall basic`), then counts each
proxy's system calls (perf stat on the syscall tracepoints, over all its threads and worker
processes) during a `wrk -t1 -c16 -d5s` run and prints them per request: on a VM where a system
call costs a microsecond, the count is a large part of a proxy's CPU. (The edge's sends go
through its send ring, a batch in one io_uring_enter: they are counted in that column.) Then it counts, over the
same kind of run, what the proxy makes the scheduler do: the proxy's own sleeps (voluntary context
switches) and preemptions (involuntary ones) per request, over its threads, and the whole
machine's context switches, task wakeups and IPIs sent per request (perf stat -a). On a PVM guest
a wakeup across CPUs is an IPI, a hypercall. Counts move less than req/s with the host's other
guests, but the scheduler's pattern can still change from one run to the next: compare proxies
within a run.

Each run's summary also pairs the edge with the faster proxy round by round (each round runs the
three within seconds of one another) and prints the median of those ratios with a 95% bootstrap
interval: more rounds of shorter runs (`--rounds 12 --duration 2s`) narrow it.

--instructions runs the edge and haproxy under valgrind's callgrind (instrumentation off until the
load starts) and prints the instructions each executes per request under `wrk -t1 -c16 -d5s`: a
count that does not move with the machine's load, unlike req/s (the kernel's share is not in it).
"""
import argparse
import http.server
import json
import os
import platform
import random
import re
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PADDOCK = os.environ.get("PADDOCK_BIN", os.path.join(ROOT, "build/release/src/cli/paddock"))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port, proc, what, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"{what} exited: {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.02)
    raise SystemExit(f"{what} is not listening on {port}")


def start_nginx(tmp, name, body):
    conf = os.path.join(tmp, f"{name}.conf")
    with open(conf, "w") as f:
        f.write(f"""worker_processes 1;
daemon off;
pid {tmp}/{name}.pid;
error_log {tmp}/{name}.err warn;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  client_body_temp_path {tmp}/{name}-body;
  proxy_temp_path {tmp}/{name}-proxy;
  fastcgi_temp_path {tmp}/{name}-fastcgi;
  uwsgi_temp_path {tmp}/{name}-uwsgi;
  scgi_temp_path {tmp}/{name}-scgi;
{body}
}}
""")
    return subprocess.Popen(["nginx", "-c", conf, "-p", tmp], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


class FakeEcs(http.server.BaseHTTPRequestHandler):
    """A one-task cluster: the task's ENI address is 127.0.0.1 and its container port the backend's."""
    backend_port = 0
    auth_port = 0

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
        action = self.headers.get("X-Amz-Target", "").rsplit(".", 1)[-1]
        arn = "arn:aws:ecs:us-east-1:000000000000:task/default/0123456789abcdef0123456789abcdef"
        td = "arn:aws:ecs:us-east-1:000000000000:task-definition/bench:1"
        if action == "ListTasks":
            out = {"taskArns": [arn]}
        elif action == "DescribeTasks":
            out = {"tasks": [{"taskArn": arn, "group": "service:bench", "lastStatus": "RUNNING",
                              "desiredStatus": "RUNNING", "healthStatus": "UNKNOWN", "taskDefinitionArn": td,
                              "attachments": [{"type": "ElasticNetworkInterface"}],
                              "containers": [{"name": "app", "networkInterfaces": [
                                  {"privateIpv4Address": "127.0.0.1"}]}]}], "failures": []}
        elif action == "DescribeTaskDefinition":
            out = {"taskDefinition": {"taskDefinitionArn": td, "networkMode": "awsvpc", "containerDefinitions": [
                {"name": "app", "portMappings": [{"containerPort": self.backend_port, "hostPort": self.backend_port}],
                 "dockerLabels": {
                     "traefik.http.routers.bench.rule": "PathPrefix(`/`)",
                     "traefik.http.routers.authed.rule": "PathPrefix(`/authed`)",
                     "traefik.http.routers.authed.middlewares": "auth",
                     "traefik.http.middlewares.auth.forwardauth.address":
                         f"http://127.0.0.1:{self.auth_port}/check",
                 }}]}}
        else:
            out = {}
        data = json.dumps(out).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-amz-json-1.1")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def process_tree(pid):
    """`pid` and its descendants (nginx's workers are its master's children)."""
    out = [pid]
    try:
        for t in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{t}/children") as f:
                for child in f.read().split():
                    out += process_tree(int(child))
    except OSError:
        pass
    return out


def cpu_seconds(pid):
    """User and system CPU seconds of `pid`'s process tree, every thread (/proc/<pid>/stat)."""
    user = system = 0
    for p in process_tree(pid):
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        user += int(fields[11])
        system += int(fields[12])
    tick = os.sysconf("SC_CLK_TCK")
    return user / tick, system / tick


def context_switches(pid):
    """Voluntary and involuntary context switches of `pid`'s process tree, every thread."""
    voluntary = involuntary = 0
    for p in process_tree(pid):
        try:
            tasks = os.listdir(f"/proc/{p}/task")
        except OSError:
            continue
        for t in tasks:
            try:
                with open(f"/proc/{p}/task/{t}/status") as f:
                    status = f.read()
            except OSError:
                continue
            voluntary += int(re.search(r"^voluntary_ctxt_switches:\s+(\d+)", status, re.M).group(1))
            involuntary += int(re.search(r"^nonvoluntary_ctxt_switches:\s+(\d+)", status, re.M).group(1))
    return voluntary, involuntary


def children_cpu_seconds():
    """User + system CPU seconds of this script's waited-for children (wrk's runs among them)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def wrk(port, connections, duration, path="/", pid=None, backend_pid=None):
    """(req/s, p99 ms, CPU microseconds per request: the proxy's (`pid`) user and system, the
    backend's (`backend_pid`) and wrk's) of one wrk run."""
    before = cpu_seconds(pid) if pid else (0, 0)
    backend_before = sum(cpu_seconds(backend_pid)) if backend_pid else 0
    wrk_before = children_cpu_seconds()
    r = subprocess.run(["wrk", "-t1", f"-c{connections}", f"-d{duration}", "--latency", f"http://127.0.0.1:{port}{path}"],
                       capture_output=True, text=True, timeout=120)
    out = r.stdout
    if r.returncode != 0 or "Non-2xx" in out or "Socket errors" in out:
        raise SystemExit(f"wrk against {port} reported errors:\n{out}\n{r.stderr}")
    after = cpu_seconds(pid) if pid else (0, 0)
    backend_after = sum(cpu_seconds(backend_pid)) if backend_pid else 0
    wrk_after = children_cpu_seconds()
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    requests = max(1, int(re.search(r"(\d+) requests in", out).group(1)))
    m = re.search(r"99%\s+([\d.]+)(us|ms|s)\b", out)
    scale = {"us": 0.001, "ms": 1.0, "s": 1000.0}[m.group(2)]
    cpu = tuple(1e6 * (a - b) / requests for a, b in zip(after, before))
    cpu += (1e6 * (backend_after - backend_before) / requests, 1e6 * (wrk_after - wrk_before) / requests)
    return rps, float(m.group(1)) * scale, cpu


def warm(url):
    """One second of load before a counted run, so that every connection is already open."""
    subprocess.run(["wrk", "-t1", "-c16", "-d1s", url], check=True, capture_output=True)


def counted_wrk(url, events, scope):
    """({perf event: count}, requests) of a `wrk -t1 -c16 -d5s` run against `url`, counting `events`
    (perf's -e list) over `scope`: perf's target, ["-p", pids] (only those, wrk not among them) or
    ["-a"] (the whole machine)."""
    perf = subprocess.run(["perf", "stat", "-x", ",", "-e", events, *scope, "wrk", "-t1", "-c16", "-d5s", url],
                          check=True, capture_output=True, text=True)
    counts = {}
    for line in perf.stderr.splitlines():  # count,unit,event,... (a "<not counted>" event is 0)
        fields = line.split(",")
        if len(fields) > 2 and fields[0].isdigit():
            counts[fields[2]] = int(fields[0])
    return counts, max(1, int(re.search(r"(\d+) requests in", perf.stdout).group(1)))


def paired_ratio(ours, theirs, resamples=2000):
    """The median of the per-round ratios ours[i] / theirs[i], and a 95% bootstrap interval of it
    (rounds resampled with replacement; a fixed seed, so a run's numbers can be recomputed)."""
    ratios = [a / b for a, b in zip(ours, theirs)]
    rng = random.Random(14)
    medians = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(resamples))
    return statistics.median(ratios), medians[int(0.025 * resamples)], medians[int(0.975 * resamples) - 1]


def names_in_order(targets):
    """The proxies, the edge first."""
    return ["edge"] + [n for n in targets if n != "edge"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", default="5s")
    ap.add_argument("--connections", type=int, action="append")
    ap.add_argument("--serve", type=float, metavar="SECONDS",
                    help="set up, print the ports and pids, keep serving this long (to profile by hand), exit")
    ap.add_argument("--forwarded-headers", action="store_true",
                    help="nginx and haproxy send the backend the X-Forwarded-* and X-Real-Ip headers the edge sends")
    ap.add_argument("--syscalls", action="store_true",
                    help="system calls per request of each proxy, by kind (perf stat)")
    ap.add_argument("--instructions", action="store_true",
                    help="user-space instructions per request of the edge and haproxy (callgrind)")
    args = ap.parse_args()
    # A SIGTERM (ending a --serve run early) still stops every process this script started.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    connections = args.connections or [16]
    tools = (("nginx", "haproxy", "wrk") + (("valgrind", "callgrind_control") if args.instructions else ())
             + (("perf",) if args.syscalls else ()))
    for tool in tools:
        if shutil.which(tool) is None:
            package = {"perf": "linux-perf", "callgrind_control": "valgrind"}.get(tool, tool)
            where = ("scripts/setup installs it" if tool in ("nginx", "haproxy", "wrk")
                     else f"apt-get install {package}")
            raise SystemExit(f"needs {tool} ({where})")
    tmp = tempfile.mkdtemp(prefix="paddock-edge-bench-")
    procs = []
    try:
        backend = free_port()
        procs.append(start_nginx(tmp, "backend", f"""  server {{ listen 127.0.0.1:{backend};
    location / {{ return 200 "ok"; }} }}"""))
        wait_listening(backend, procs[-1], "the backend")

        # --forwarded-headers: nginx and haproxy send the backend the headers the edge sends it, as
        # Traefik does (X-Forwarded-For, -Host, -Port, -Proto and X-Real-Ip), so the backend parses
        # the same request behind each.
        nginx_forwarded = ("""
      proxy_set_header X-Forwarded-For $remote_addr; proxy_set_header X-Forwarded-Host $http_host;
      proxy_set_header X-Forwarded-Port $server_port; proxy_set_header X-Forwarded-Proto $scheme;
      proxy_set_header X-Real-Ip $remote_addr;""" if args.forwarded_headers else "")
        haproxy_forwarded = ("""  option forwardfor
  http-request set-header X-Forwarded-Host %[req.hdr(host)]
  http-request set-header X-Forwarded-Port %[dst_port]
  http-request set-header X-Forwarded-Proto http
  http-request set-header X-Real-Ip %[src]
""" if args.forwarded_headers else "")
        nginx_port = free_port()
        procs.append(start_nginx(tmp, "proxy", f"""  upstream b {{ server 127.0.0.1:{backend}; keepalive 64; }}
  server {{ listen 127.0.0.1:{nginx_port};
    location / {{ proxy_pass http://b; proxy_http_version 1.1; proxy_set_header Connection "";{nginx_forwarded} }} }}"""))
        wait_listening(nginx_port, procs[-1], "nginx")

        haproxy_port = free_port()
        cfg = os.path.join(tmp, "haproxy.cfg")
        with open(cfg, "w") as f:
            f.write(f"""global
  nbthread 1
  maxconn 4096
defaults
  mode http
  timeout connect 5s
  timeout client 60s
  timeout server 60s
  http-reuse always
frontend f
  bind 127.0.0.1:{haproxy_port}
{haproxy_forwarded}  default_backend b
backend b
  server s1 127.0.0.1:{backend}
""")
        grind = (lambda name: ["valgrind", "--tool=callgrind", "--instr-atstart=no",
                               f"--callgrind-out-file={tmp}/{name}.callgrind"]) if args.instructions else (lambda name: [])
        procs.append(subprocess.Popen(grind("haproxy") + ["haproxy", "-f", cfg], stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL))
        wait_listening(haproxy_port, procs[-1], "haproxy", timeout=60)

        auth = free_port()  # forwardAuth's server: lets every request through
        procs.append(start_nginx(tmp, "auth", f"""  server {{ listen 127.0.0.1:{auth};
    location / {{ return 204; }} }}"""))
        wait_listening(auth, procs[-1], "the auth server")

        FakeEcs.backend_port = backend
        FakeEcs.auth_port = auth
        ecs = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakeEcs)
        threading.Thread(target=ecs.serve_forever, daemon=True).start()
        edge_port = free_port()
        env = dict(os.environ, AWS_ACCESS_KEY_ID="AKIDBENCH", AWS_SECRET_ACCESS_KEY="bench")
        procs.append(subprocess.Popen(
            grind("edge") + [PADDOCK, "edge", "--endpoint", f"http://127.0.0.1:{ecs.server_address[1]}", "--entrypoint",
             f"web=127.0.0.1:{edge_port}", "--no-api", "--io-threads", "1"],
            env=env, stdout=subprocess.DEVNULL, stderr=open(os.path.join(tmp, "edge.err"), "w")))
        wait_listening(edge_port, procs[-1], "the edge", timeout=60)
        deadline = time.monotonic() + 60
        while True:  # routed once its first read is done
            try:
                if urllib.request.urlopen(f"http://127.0.0.1:{edge_port}/", timeout=2).status == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise SystemExit("the edge does not route to the backend")
            time.sleep(0.05)

        targets = {"edge": edge_port, "nginx": nginx_port, "haproxy": haproxy_port}
        pids = {"edge": procs[-1].pid, "nginx": procs[1].pid, "haproxy": procs[2].pid}
        if args.instructions:
            for name, pid in (("edge", procs[-1].pid), ("haproxy", procs[2].pid)):
                url = f"http://127.0.0.1:{targets[name]}/"
                subprocess.run(["wrk", "-t1", "-c16", "-d1s", url], check=True, capture_output=True)  # warm
                subprocess.run(["callgrind_control", "-i", "on", str(pid)], check=True, capture_output=True)
                out = subprocess.run(["wrk", "-t1", "-c16", "-d5s", url], check=True, capture_output=True,
                                     text=True).stdout
                subprocess.run(["callgrind_control", "-i", "off", str(pid)], check=True, capture_output=True)
                subprocess.run(["callgrind_control", "-d", str(pid)], check=True, capture_output=True)
                requests = int(re.search(r"(\d+) requests in", out).group(1))
                total = 0
                for f in os.listdir(tmp):
                    if f.startswith(f"{name}.callgrind"):
                        m = re.search(r"^totals: (\d+)", open(os.path.join(tmp, f)).read(), re.M)
                        total += int(m.group(1)) if m else 0
                print(f"{name}: {total // max(requests, 1):,} user-space instructions per request "
                      f"({requests:,} requests under callgrind)", flush=True)
            return
        if args.syscalls:
            null_call = subprocess.run(["perf", "bench", "syscall", "basic", "--loop", "1000000"],
                                       check=True, capture_output=True, text=True).stdout
            print("a system call costs " + re.search(r"([\d.]+) usecs/op", null_call).group(1)
                  + " µs here (perf bench syscall basic: getppid())")
            kinds = ("recvfrom", "sendto", "epoll_wait", "io_uring_enter", "clock_gettime")
            events = ",".join(["raw_syscalls:sys_enter"] + [f"syscalls:sys_enter_{k}" for k in kinds])
            print("| proxy | system calls per request | " + " | ".join(kinds) + " |")
            print("|---|---:|" + "---:|" * len(kinds))
            for name in names_in_order(targets):
                url = f"http://127.0.0.1:{targets[name]}/"
                warm(url)
                pid_list = ",".join(str(p) for p in process_tree(pids[name]))
                counts, requests = counted_wrk(url, events, ["-p", pid_list])
                counts = {event.rsplit("sys_enter_", 1)[-1]: n for event, n in counts.items()}
                print(f"| {name} | {counts.get('raw_syscalls:sys_enter', 0) / requests:.2f} | "
                      + " | ".join(f"{counts.get(k, 0) / requests:.2f}" for k in kinds) + " |", flush=True)
            machine = ("context-switches", "sched:sched_wakeup", "ipi:ipi_send_cpu")
            print("\n| proxy, per request | its sleeps | its preemptions | the machine's context switches "
                  "| task wakeups | IPIs sent |")
            print("|---|---:|---:|---:|---:|---:|")
            for name in names_in_order(targets):
                url = f"http://127.0.0.1:{targets[name]}/"
                warm(url)
                before = context_switches(pids[name])
                counts, requests = counted_wrk(url, ",".join(machine), ["-a"])
                after = context_switches(pids[name])
                print(f"| {name} | {(after[0] - before[0]) / requests:.3f} | {(after[1] - before[1]) / requests:.3f} | "
                      + " | ".join(f"{counts.get(k, 0) / requests:.3f}" for k in machine) + " |", flush=True)
            return
        if args.serve:
            print(json.dumps({"ports": targets, "pids": {"edge": procs[-1].pid, "haproxy": procs[2].pid,
                                                          "nginx": procs[1].pid}}), flush=True)
            time.sleep(args.serve)
            return
        print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, nproc {os.cpu_count()}, "
              f"kernel {platform.release()}, load {os.getloadavg()[0]:.1f}, wrk -t1 -d{args.duration}")
        for c in connections:
            results = {name: [] for name in targets}
            results["edge, forwardAuth"] = []
            names = list(targets)
            for r in range(args.rounds):
                order = names[r % len(names):] + names[:r % len(names)]
                for name in order:
                    results[name].append(wrk(targets[name], c, args.duration, pid=pids[name],
                                             backend_pid=procs[0].pid))
                results["edge, forwardAuth"].append(wrk(edge_port, c, args.duration, "/authed"))
            print(f"\n{c} connections, {args.rounds} rounds (req/s per round; p99 ms worst; the proxy's own CPU "
                  f"per request, user + system, mean)")
            print("| proxy | req/s (rounds) | mean req/s | p99 ms (worst) | CPU µs/req (user + sys) "
                  "| backend's, wrk's CPU µs/req |")
            print("|---|---|---:|---:|---:|---:|")
            summary = {}
            for name in names:
                rps = [x for x, _, _ in results[name]]
                p99 = max(y for _, y, _ in results[name])
                user = sum(z[0] for _, _, z in results[name]) / len(rps)
                system = sum(z[1] for _, _, z in results[name]) / len(rps)
                backend_cpu = sum(z[2] for _, _, z in results[name]) / len(rps)
                wrk_cpu = sum(z[3] for _, _, z in results[name]) / len(rps)
                summary[name] = (sum(rps) / len(rps), p99, user + system)
                print(f"| {name} | {' / '.join(f'{x:,.0f}' for x in rps)} | {summary[name][0]:,.0f} | {p99:.2f} | "
                      f"{user + system:.1f} ({user:.1f} + {system:.1f}) | {backend_cpu:.1f}, {wrk_cpu:.1f} |")
            best = max(summary["nginx"][0], summary["haproxy"][0])
            worst_p99 = max(summary["nginx"][1], summary["haproxy"][1])
            least_cpu = min(summary["nginx"][2], summary["haproxy"][2])
            print(f"edge / faster of nginx and haproxy: {summary['edge'][0] / best:.2f} (bar >= 1.0); "
                  f"edge p99 {summary['edge'][1]:.2f} ms vs the worse {worst_p99:.2f} ms (bar <=); "
                  f"edge CPU per request / the leaner one's: {summary['edge'][2] / least_cpu:.2f}")
            faster = max(("nginx", "haproxy"), key=lambda n: summary[n][0])
            median, low, high = paired_ratio([x for x, _, _ in results["edge"]],
                                             [x for x, _, _ in results[faster]])
            print(f"paired by round (each round runs the three within seconds of one another, so the "
                  f"host's slower drifts cancel): edge / {faster} median {median:.3f}, 95% bootstrap "
                  f"interval {low:.3f}-{high:.3f} over {args.rounds} rounds")
            rps = [x for x, _, _ in results["edge, forwardAuth"]]
            auth_rps, auth_p99 = sum(rps) / len(rps), max(y for _, y, _ in results["edge, forwardAuth"])
            print(f"forwardAuth (a router whose forwardAuth server, nginx `return 204`, is asked per request): "
                  f"{' / '.join(f'{x:,.0f}' for x in rps)} req/s, mean {auth_rps:,.0f} = "
                  f"{auth_rps / summary['edge'][0]:.2f}x the edge without it; p99 {auth_p99:.2f} ms")
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
