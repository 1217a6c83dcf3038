// task_probe: a statically linked program that runs in any image and plays the hostile task of the
// hardening tests.
//
// `task_probe` (no argument) tries, by raw syscall, what the containers' seccomp profile must
// refuse, printing one line per attempt:
//
//   seccomp 2                        (/proc/self/status: 0 none, 2 a filter)
//   unshare(CLONE_NEWUSER) EPERM     (or "ok")
//   clone(CLONE_NEWUSER) ENOSYS      (a child in a new user namespace; "ok" when it was made)
//   keyctl(GET_KEYRING_ID, @u) EPERM (the kernel keyring, which no namespace separates)
//   add_key(user) EPERM
//   perf_event_open EPERM
//   bpf(MAP_CREATE) EPERM
//   fork ok                          (what every task needs)
//
// No libc wrappers for the calls under test: each is the raw syscall, so that nothing in between
// changes what the kernel and the filter answer.
//
// `task_probe udp-spray IP COUNT` sends one UDP datagram to each of COUNT ports of IP (30000 up),
// from one socket: COUNT new flows for the node's connection tracking, then exits ("sprayed N").
//
// The tests (agent/runtime runtime_test, tests/test_security_hardening.py) copy it into a
// container's rootfs and read its output.
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

const char* ErrnoName(int e) {
  switch (e) {
    case EPERM: return "EPERM";
    case ENOSYS: return "ENOSYS";
    case EACCES: return "EACCES";
    case EINVAL: return "EINVAL";
    case ENOENT: return "ENOENT";
    case ENOMEM: return "ENOMEM";
    default: return strerror(e);
  }
}

void Report(const char* what, long rc) {
  if (rc >= 0) {
    printf("%s ok\n", what);
  } else {
    printf("%s %s\n", what, ErrnoName(errno));
  }
  fflush(stdout);
}

int UdpSpray(const char* ip, int count) {
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr;
  memset(&addr, 0, sizeof addr);
  addr.sin_family = AF_INET;
  if (fd < 0 || inet_pton(AF_INET, ip, &addr.sin_addr) != 1) {
    printf("cannot spray %s\n", ip);
    return 2;
  }
  int sent = 0;
  for (int i = 0; i < count && i < 30000; ++i) {
    addr.sin_port = htons(static_cast<uint16_t>(30000 + i));
    if (sendto(fd, "x", 1, 0, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 1) ++sent;
  }
  close(fd);
  printf("sprayed %d\n", sent);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && strcmp(argv[1], "udp-spray") == 0) return UdpSpray(argv[2], atoi(argv[3]));
  FILE* status = fopen("/proc/self/status", "r");
  char line[256];
  while (status != nullptr && fgets(line, sizeof line, status) != nullptr) {
    if (strncmp(line, "Seccomp:", 8) == 0) printf("seccomp %d\n", atoi(line + 8));
  }
  if (status != nullptr) fclose(status);

  // In a child, so that a success does not move the probe itself into a new namespace.
  pid_t child = fork();
  if (child == 0) _exit(syscall(SYS_unshare, CLONE_NEWUSER) == 0 ? 0 : errno);
  int wstatus = 0;
  waitpid(child, &wstatus, 0);
  errno = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : EINVAL;
  Report("unshare(CLONE_NEWUSER)", errno == 0 ? 0 : -1);

  long pid = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
  if (pid == 0) _exit(0);
  if (pid > 0) waitpid(static_cast<pid_t>(pid), nullptr, 0);
  Report("clone(CLONE_NEWUSER)", pid);

  constexpr long kKeyctlGetKeyringId = 0;  // KEYCTL_GET_KEYRING_ID
  constexpr long kKeySpecUserKeyring = -4;  // KEY_SPEC_USER_KEYRING
  Report("keyctl(GET_KEYRING_ID, @u)", syscall(SYS_keyctl, kKeyctlGetKeyringId, kKeySpecUserKeyring, 0));
  long key = syscall(SYS_add_key, "user", "paddock-probe", "x", 1, kKeySpecUserKeyring);
  Report("add_key(user)", key);
  constexpr long kKeyctlInvalidate = 21;  // KEYCTL_INVALIDATE: leave no key behind where it got in
  if (key >= 0) syscall(SYS_keyctl, kKeyctlInvalidate, key);

  perf_event_attr attr;
  memset(&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_CPU_CLOCK;
  attr.exclude_kernel = 1;
  long fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
  Report("perf_event_open", fd);
  if (fd >= 0) close(static_cast<int>(fd));

  union bpf_attr battr;
  memset(&battr, 0, sizeof battr);
  battr.map_type = BPF_MAP_TYPE_ARRAY;
  battr.key_size = 4;
  battr.value_size = 4;
  battr.max_entries = 1;
  fd = syscall(SYS_bpf, BPF_MAP_CREATE, &battr, sizeof battr);
  Report("bpf(MAP_CREATE)", fd);
  if (fd >= 0) close(static_cast<int>(fd));

  child = fork();
  if (child == 0) _exit(0);
  if (child > 0) waitpid(child, nullptr, 0);
  Report("fork", child);
  return 0;
}
