"""What the Python benchmarks read from /proc."""


def rss_kib(pid):
    """The process's resident set (VmRSS) in KiB; 0 when /proc does not say."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0
