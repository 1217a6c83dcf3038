"""What the tests that run real tasks share: whether this machine can run them, waiting for a task to
reach a status, a task's address, and fetching a page a task serves."""

import os
import shutil
import time
import urllib.request

BUSYBOX = "/bin/busybox"


def skip_reason(tools=("crun",), files=()):
    """Why real tasks cannot run here (None when they can): root, the tools on PATH, busybox-static
    and any other files the test needs."""
    if os.geteuid() != 0:
        return "needs root (containers and network namespaces)"
    for tool in tools:
        if shutil.which(tool) is None:
            return f"needs {tool}"
    for path in (BUSYBOX, *files):
        if not os.path.exists(path):
            return f"needs {path}"
    return None


def httpd_image(state_dir, work_dir, name, page, applets=()):
    """Imports `name` into the store at `state_dir`: busybox serving `page` on port 8080 with httpd."""
    from test_images import busybox_rootfs, image
    root = busybox_rootfs(os.path.join(work_dir, "bb-rootfs-" + name.replace(":", "-").replace("/", "-")),
                          applets, page)
    image(state_dir, "import-rootfs", root, "--name", name, "--cmd", "httpd -f -p 8080 -h /www")


def wait_all_stopped(ecs, cluster, arns, timeout=30):
    """Polls DescribeTasks until every task of `arns` (at most 100) is STOPPED or `timeout` passes;
    returns whether they all stopped (for clean-ups, which must not fail)."""
    deadline = time.monotonic() + timeout
    while arns:
        if all(t["lastStatus"] == "STOPPED" for t in ecs.describe_tasks(cluster=cluster, tasks=arns)["tasks"]):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def wait_for_status(test, ecs, cluster, arn, status, timeout=30, context=lambda: ""):
    """Polls DescribeTasks until the task's lastStatus is `status` and returns the task; fails `test`
    (with `context()` appended) if it stops first or the timeout passes."""
    deadline = time.monotonic() + timeout
    while True:
        r = ecs.describe_tasks(cluster=cluster, tasks=[arn])
        test.assertEqual(r["failures"], [])
        task = r["tasks"][0]
        if task["lastStatus"] == status:
            return task
        if task["lastStatus"] == "STOPPED" or time.monotonic() > deadline:
            test.fail(f"task did not reach {status}: {task} {context()}")
        time.sleep(0.05)


def connected_instance(ecs, cluster, timeout=30, context=lambda: ""):
    """The first container instance of `cluster` (`paddock up`'s in-process one) once its agent is
    connected; AssertionError (with `context()`) if none is within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        arns = ecs.list_container_instances(cluster=cluster)["containerInstanceArns"]
        if arns:
            ci = ecs.describe_container_instances(cluster=cluster, containerInstances=arns)["containerInstances"][0]
            if ci["agentConnected"]:
                return ci
        if time.monotonic() > deadline:
            raise AssertionError(f"no connected in-process instance in {cluster}: {arns} {context()}")
        time.sleep(0.1)


def stop_quietly(ecs, cluster, arn, timeout=30):
    """StopTask and wait (bounded) for STOPPED, ignoring every error: a cleanup."""
    try:
        ecs.stop_task(cluster=cluster, task=arn, reason="test cleanup")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if ecs.describe_tasks(cluster=cluster, tasks=[arn])["tasks"][0]["lastStatus"] == "STOPPED":
                return
            time.sleep(0.1)
    except Exception:  # noqa: BLE001 - best effort
        pass


def task_ip(task):
    """The private IPv4 address of an awsvpc task's ENI."""
    return {d["name"]: d["value"] for d in task["attachments"][0]["details"]}["privateIPv4Address"]


def fetch(url, timeout=10):
    """GETs `url`, retrying while nothing answers yet (a container that has just started)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                return resp.read().decode()
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)
