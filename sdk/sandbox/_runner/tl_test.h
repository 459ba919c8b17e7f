/* tuneloop's minimal C/C++ test runner (framework "tltest").
 *
 *   #include "tl_test.h"
 *   TL_TEST(adds) { TL_ASSERT(add(1, 2) == 3); }
 *
 * main() is provided here; do not define one in the tests. Every test runs in its own forked
 * child (a crash fails that test only).
 *
 * No code of the solution ever runs in the runner process (issue 14):
 * - the runner starts from .preinit_array, which the dynamic loader calls before every
 *   constructor, C++ global initialiser and main(). It reads the nonce from fd 4 (written and
 *   closed by the driver), makes itself non-dumpable and forks one child per test; it never
 *   returns to the loader, so constructors and main() run only in the test children, after the
 *   child closed fd 3, wiped its copy of the nonce and installed the guard. tl_build.py refuses
 *   (flag runner_tampering) a program in which solution code could still run earlier: an IFUNC
 *   resolver, a second .preinit_array entry, an exported function (interposing on the loader or
 *   libc), or fake bounds of the test list. Tests are registered as data (section tl_cases),
 *   not by constructors; an entry the solution adds is one more result, counted as extra;
 * - results go to fd 3, a pipe the driver opened, one line per test
 *   "<nonce> passed|failed <name> [reason]"; stdout is never read for verdicts, so printed
 *   "pass" lines count for nothing;
 * - the runner calls the kernel directly (inline syscalls, static functions; libc is not even
 *   initialised in it): a solution that defines read/write/fork/waitpid/fread/_exit interposes
 *   on nothing here;
 * - a test passes only if its function returns (a per-test token on a private pipe), so exit(0)
 *   inside the code under test is "exited_early"; /proc/<pid>/fd and /proc/<pid>/mem of the
 *   runner are closed to the tests (non-dumpable before any solution code ran); the children
 *   leave through exit_group, so atexit handlers and destructors never run after a verdict;
 * - a child cannot signal, stop or prlimit the runner, the driver, the driver's ancestors
 *   (TL_GUARD_IDS, set by tl_build.py: under the process backend the host itself) or their
 *   groups (tl_guard, installed before the constructors: seccomp kills it with SIGSYS, reported
 *   "tampering_signal" and flagged by the sandbox).
 * Not covered: code inside a test's own child (its constructors included) shares that child's
 * address space and could find that test's token (it can no longer fork: see tl_guard); the static
 * scan flags constructors, inline asm and raw syscalls. */
#ifndef TL_TEST_H
#define TL_TEST_H
#include <stddef.h>
#include <sys/syscall.h>
#if !defined(__x86_64__) && !defined(__aarch64__)
#include <unistd.h>
#endif

#ifdef __cplusplus
#define TL_EXTERN extern "C"
#else
#define TL_EXTERN
#endif

typedef void (*tl_fn)(void);
/* Tests are data, not constructors: one entry per TL_TEST in section "tl_cases", bounded by the
 * linker's __start_/__stop_ symbols (tl_build.py checks they are the linker's, at the section's
 * bounds), so the runner knows them before any constructor could run. */
struct tl_case { const char *name; tl_fn fn; };
#ifdef __cplusplus
extern "C" {
#endif
extern const struct tl_case __start_tl_cases[] __attribute__((weak, visibility("hidden")));
extern const struct tl_case __stop_tl_cases[] __attribute__((weak, visibility("hidden")));
#ifdef __cplusplus
}
#endif

static long tl_sys(long n, long a, long b, long c, long d, long e) {
#if defined(__x86_64__)
  long ret;
  register long r10 __asm__("r10") = d;
  register long r8 __asm__("r8") = e;
  __asm__ volatile ("syscall" : "=a"(ret) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8) : "rcx", "r11", "memory");
  return ret;
#elif defined(__aarch64__)
  register long x8 __asm__("x8") = n;
  register long x0 __asm__("x0") = a;
  register long x1 __asm__("x1") = b;
  register long x2 __asm__("x2") = c;
  register long x3 __asm__("x3") = d;
  register long x4 __asm__("x4") = e;
  __asm__ volatile ("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4) : "memory");
  return x0;
#else
  return syscall(n, a, b, c, d, e);
#endif
}

#define TL_SIGCHLD 17
static size_t tl_len(const char *s) { size_t n = 0; while (s[n]) n++; return n; }
static void tl_write(int fd, const char *s, size_t n) {
  while (n > 0) { long w = tl_sys(SYS_write, fd, (long)s, (long)n, 0, 0); if (w <= 0) return; s += w; n -= (size_t)w; }
}
static void tl_puts(int fd, const char *s) { tl_write(fd, s, tl_len(s)); }
static void tl_exit(int code) { for (;;) tl_sys(SYS_exit_group, code, 0, 0, 0, 0); }
static void tl_utoa(unsigned v, char *out) { char b[16]; int i = 0; do { b[i++] = (char)('0' + v % 10); v /= 10; } while (v); while (i) *out++ = b[--i]; *out = 0; }

#define TL_STR2(x) #x
#define TL_STR(x) TL_STR2(x)
#define TL_TEST(name) static void name(void); \
  __attribute__((used, section("tl_cases"), aligned(sizeof(void *)))) \
  static const struct tl_case tl_case_##name = {#name, name}; \
  static void name(void)
#define TL_ASSERT(cond) do { if (!(cond)) { tl_puts(1, "TLFAIL " __FILE__ ":" TL_STR(__LINE__) ": " #cond "\n"); tl_exit(1); } } while (0)

static char tl_nonce[80];
static long tl_ids[3];   /* the runner, its parent (tl_build.py), the runner's process group */
static long tl_extra[40];  /* TL_GUARD_IDS: the driver's ancestors (pid) and their groups (-pgid) */
static int tl_nextra = 0;
static void tl_parse_ids(char **envp) {
  const char *key = "TL_GUARD_IDS=";
  for (; envp && *envp; envp++) {
    const char *e = *envp;
    int i = 0;
    while (key[i] && e[i] == key[i]) i++;
    if (key[i]) continue;
    for (e += i; *e && tl_nextra < 40; ) {
      long sign = 1, v = 0;
      int any = 0;
      if (*e == '-') { sign = -1; e++; }
      while (*e >= '0' && *e <= '9') { v = v * 10 + (*e - '0'); e++; any = 1; }
      if (any && v > 1) tl_extra[tl_nextra++] = sign * v;
      if (*e != ',') break;
      e++;
    }
  }
}
static long tl_selected = -1, tl_token_fd = -1;   /* set in a test child only */
static unsigned long long tl_token;

/* The test child may not signal (or prlimit) the runner, the build driver or their group: a
 * classic-BPF seccomp filter kills the child with SIGSYS instead (reported as
 * "tampering_signal"); the same program as _runner/tl_guard.py for Python. Nor may it make a
 * process (fork, vfork, clone without CLONE_THREAD: EPERM; clone3: ENOSYS, threads fall back to
 * clone): a child forked per guess runs the rest of the test and its exit status says whether the
 * guess passed, an oracle for the expected value (issue 14, round 9: tests/rewards/test_redteam_round9.py). */
struct tl_bpf { unsigned short code; unsigned char jt, jf; unsigned int k; };
struct tl_fprog { unsigned short len; struct tl_bpf *filter; };
static void tl_guard(void) {
#if defined(__x86_64__) || defined(__aarch64__)
#if defined(__x86_64__)
  const unsigned arch = 0xC000003Eu; const int x86 = 1;
#else
  const unsigned arch = 0xC00000B7u; const int x86 = 0;
#endif
  const unsigned sig_nr[5] = {SYS_kill, SYS_tkill, SYS_tgkill, SYS_rt_sigqueueinfo, SYS_rt_tgsigqueueinfo};
  const unsigned pid_nr[2] = {434 /* pidfd_open */, SYS_prlimit64};
  unsigned sig_ids[6 + 40], pid_ids[3 + 40];
  int nsig = 0, npid = 0;
  sig_ids[nsig++] = (unsigned)tl_ids[0]; sig_ids[nsig++] = (unsigned)tl_ids[1]; sig_ids[nsig++] = 1u;
  sig_ids[nsig++] = 0u; sig_ids[nsig++] = 0xFFFFFFFFu; sig_ids[nsig++] = (unsigned)-tl_ids[2];
  pid_ids[npid++] = (unsigned)tl_ids[0]; pid_ids[npid++] = (unsigned)tl_ids[1]; pid_ids[npid++] = 1u;
  for (int i = 0; i < tl_nextra; i++) {   /* the driver's ancestors (process backend: the host) */
    sig_ids[nsig++] = (unsigned)tl_extra[i];
    if (tl_extra[i] > 0) pid_ids[npid++] = (unsigned)tl_extra[i];
  }
  struct tl_bpf p[16 + 6 + 40 + 3 + 40 + 4 + 12];
  const unsigned clone_nr = x86 ? 56u : 220u, clone3_nr = 435u, fork_nr[2] = {57u, 58u};   /* x86_64: fork, vfork */
  int nfork = x86 ? 2 : 0;
  int n = 0, hdr = 4 + x86 + 1 + 5 + 2 + nfork + 2 + 1, sig_at = hdr, pid_at = sig_at + 1 + nsig + 1,
      kill_at = pid_at + 1 + npid + 1, clone_at = kill_at + 1, eperm_at = clone_at + 3, enosys_at = eperm_at + 1;
#define TL_OP(c, t, f, kk) do { p[n].code = (c); p[n].jt = (unsigned char)(t); p[n].jf = (unsigned char)(f); p[n].k = (kk); n++; } while (0)
#define TL_TO(label) ((label) - n - 1)
  TL_OP(0x20, 0, 0, 4); TL_OP(0x15, 1, 0, arch); TL_OP(0x06, 0, 0, 0x80000000u); TL_OP(0x20, 0, 0, 0);
  if (x86) TL_OP(0x35, TL_TO(kill_at), 0, 0x40000000u);
  TL_OP(0x15, TL_TO(kill_at), 0, 424 /* pidfd_send_signal */);
  for (int i = 0; i < 5; i++) TL_OP(0x15, TL_TO(sig_at), 0, sig_nr[i]);
  for (int i = 0; i < 2; i++) TL_OP(0x15, TL_TO(pid_at), 0, pid_nr[i]);
  for (int i = 0; i < nfork; i++) TL_OP(0x15, TL_TO(eperm_at), 0, fork_nr[i]);
  TL_OP(0x15, TL_TO(clone_at), 0, clone_nr); TL_OP(0x15, TL_TO(enosys_at), 0, clone3_nr);
  TL_OP(0x06, 0, 0, 0x7FFF0000u);
  TL_OP(0x20, 0, 0, 16); for (int i = 0; i < nsig; i++) TL_OP(0x15, TL_TO(kill_at), 0, sig_ids[i]); TL_OP(0x06, 0, 0, 0x7FFF0000u);
  TL_OP(0x20, 0, 0, 16); for (int i = 0; i < npid; i++) TL_OP(0x15, TL_TO(kill_at), 0, pid_ids[i]); TL_OP(0x06, 0, 0, 0x7FFF0000u);
  TL_OP(0x06, 0, 0, 0x80000000u);
  /* clone_at: a thread (CLONE_THREAD in the flags) is allowed, a new process is EPERM; clone3 is ENOSYS (libc
   * then makes its threads with clone) */
  TL_OP(0x20, 0, 0, 16); TL_OP(0x45, 0, 1, 0x00010000u); TL_OP(0x06, 0, 0, 0x7FFF0000u);
  TL_OP(0x06, 0, 0, 0x00050000u | 1u); TL_OP(0x06, 0, 0, 0x00050000u | 38u);
#undef TL_OP
#undef TL_TO
  struct tl_fprog prog = {(unsigned short)n, p};
  tl_sys(SYS_prctl, 38 /* PR_SET_NO_NEW_PRIVS */, 1, 0, 0, 0);
  tl_sys(SYS_prctl, 22 /* PR_SET_SECCOMP */, 2 /* SECCOMP_MODE_FILTER */, (long)&prog, 0, 0);
#endif
}

static void tl_report(const char *verdict, const char *name, const char *reason) {
  tl_puts(3, tl_nonce); tl_puts(3, " "); tl_puts(3, verdict); tl_puts(3, " "); tl_puts(3, name);
  if (reason) { tl_puts(3, " "); tl_puts(3, reason); }
  tl_puts(3, "\n");
}

/* One test in its own child. The parent (the runner) only waits and reports; the child wipes
 * the nonce, closes fd 3, installs the guard and returns 1: it then leaves tl_preinit, the
 * loader runs every constructor (the solution's, C++ globals) in the child, and main() runs the
 * test. */
static int tl_run_one(long i) {
  int fds[2];
  unsigned long long token = 0, got = 0;
  const struct tl_case *c = &__start_tl_cases[i];
  if (tl_sys(SYS_getrandom, (long)&token, sizeof token, 0, 0, 0) != (long)sizeof token || tl_sys(SYS_pipe2, (long)fds, 0, 0, 0, 0) != 0) {
    tl_report("failed", c->name, "setup_failed");
    return 0;
  }
  token |= 1ULL;
  long pid = tl_sys(SYS_clone, TL_SIGCHLD, 0, 0, 0, 0);
  if (pid == 0) {
    tl_sys(SYS_close, fds[0], 0, 0, 0, 0);
    tl_sys(SYS_close, 3, 0, 0, 0, 0);
    for (volatile char *p = tl_nonce; p < tl_nonce + sizeof tl_nonce; p++) *p = 0;
    tl_guard();
    tl_selected = i; tl_token_fd = fds[1]; tl_token = token;
    return 1;
  }
  tl_sys(SYS_close, fds[1], 0, 0, 0, 0);
  long n = pid < 0 ? -1 : tl_sys(SYS_read, fds[0], (long)&got, sizeof got, 0, 0);
  tl_sys(SYS_close, fds[0], 0, 0, 0, 0);
  int status = 0;
  if (pid < 0 || tl_sys(SYS_wait4, pid, (long)&status, 0, 0, 0) != pid) { tl_report("failed", c->name, "fork_failed"); return 0; }
  int exited = (status & 0x7f) == 0, code = (status >> 8) & 0xff, sig = status & 0x7f;
  char why[32], num[16];
  why[0] = 'e'; why[1] = 'x'; why[2] = 'i'; why[3] = 't'; why[4] = '_'; why[5] = 0;
  if (exited && code == 0 && n == (long)sizeof got && got == token) tl_report("passed", c->name, 0);
  else if (exited && code == 0) tl_report("failed", c->name, "exited_early");
  else if (!exited && sig == 31) tl_report("failed", c->name, "tampering_signal");
  else {
    tl_utoa((unsigned)(exited ? code : sig), num);
    if (!exited) { why[0] = 's'; why[1] = 'i'; why[2] = 'g'; why[3] = '_'; why[4] = 0; }
    size_t k = tl_len(why), j = 0;
    while (num[j] && k < sizeof why - 1) why[k++] = num[j++];
    why[k] = 0;
    tl_report("failed", c->name, why);
  }
  return 0;
}

/* The runner, from .preinit_array: the dynamic loader calls it before any constructor or IFUNC-free
 * initialiser of the program (tl_build.py refuses a binary with IFUNC resolvers, another
 * .preinit_array entry or exported functions that could interpose on the loader), so no code of
 * the solution ever runs in this process: it never returns here (exit_group), only the test
 * children do. Raw syscalls only: libc is not initialised yet. */
static void tl_preinit(int argc, char **argv, char **envp) {
  (void)argc; (void)argv;
  tl_parse_ids(envp);
  tl_sys(SYS_prctl, 4 /* PR_SET_DUMPABLE */, 0, 0, 0, 0);
  tl_ids[0] = tl_sys(SYS_getpid, 0, 0, 0, 0, 0); tl_ids[1] = tl_sys(SYS_getppid, 0, 0, 0, 0, 0);
  tl_ids[2] = tl_sys(SYS_getpgid, 0, 0, 0, 0, 0);
  size_t got = 0;
  for (;;) {
    long r = tl_sys(SYS_read, 4, (long)(tl_nonce + got), (long)(sizeof tl_nonce - 1 - got), 0, 0);
    if (r <= 0) break;
    got += (size_t)r;
    if (got >= sizeof tl_nonce - 1) break;
  }
  tl_sys(SYS_close, 4, 0, 0, 0, 0);
  while (got && (tl_nonce[got - 1] == '\n' || tl_nonce[got - 1] == ' ')) got--;
  tl_nonce[got] = 0;
  if (got < 16) { tl_puts(2, "tl_test: no nonce on fd 4 (run through tl_build.py)\n"); tl_exit(2); }
  long count = __start_tl_cases && __stop_tl_cases ? (long)(__stop_tl_cases - __start_tl_cases) : 0;
  for (long i = 0; i < count; i++)
    if (tl_run_one(i)) return;   /* a test child: on to the constructors, then main() */
  tl_puts(3, tl_nonce); tl_puts(3, " done\n");
  tl_exit(0);
}
__attribute__((used, section(".preinit_array"))) static void (*const tl_preinit_entry)(int, char **, char **) = tl_preinit;

TL_EXTERN int main(void) {
  if (tl_selected < 0) { tl_puts(2, "tl_test: main() outside a test child\n"); tl_exit(2); }
  __start_tl_cases[tl_selected].fn();
  tl_write((int)tl_token_fd, (const char *)&tl_token, sizeof tl_token);
  tl_exit(0);
  return 0;
}
#endif
