/* tuneloop's minimal C/C++ test runner (framework "tltest").
 *
 *   #include "tl_test.h"
 *   TL_TEST(adds) { TL_ASSERT(add(1, 2) == 3); }
 *
 * main() is provided here; do not define one in the tests. Every test runs in its own forked
 * child (a crash fails that test only).
 *
 * The verdict channel is out of the candidate's easy reach (issue 14):
 * - results go to fd 3, a pipe the build driver (tl_build.py) opened before the program
 *   started, one line per test "<nonce> passed|failed <name> [reason]"; the nonce is read in
 *   main() from fd 4 (written and closed by the driver), so code that runs before main
 *   (constructors, C++ globals) never sees it, and a constructor that drains fd 4 leaves main
 *   without a nonce: every test is then missing. stdout is never read for verdicts, so printed
 *   "pass" lines count for nothing;
 * - the runner calls the kernel directly (inline syscalls, static functions): a solution that
 *   defines read/write/fork/waitpid/fread/_exit interposes on nothing here;
 * - the child closes fd 3 and wipes the nonce before the test runs; a test passes only if its
 *   function returns (a per-test token on a private pipe), so exit(0) inside the code under
 *   test is "exited_early"; the parent is made non-dumpable, so /proc/<pid>/fd and /proc/<pid>/mem
 *   of the runner are closed to the tests; the runner leaves through exit_group, so atexit
 *   handlers and destructors of the solution never run after the verdicts;
 * - the child cannot signal, stop or prlimit the runner, the driver or their group (tl_guard:
 *   seccomp kills it with SIGSYS, reported "tampering_signal" and flagged by the sandbox).
 * Not covered: code inside a test's own child shares its address space and could find that
 * test's token; the static scan flags constructors, inline asm and raw syscalls. */
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
static struct { const char *name; tl_fn fn; } tl_tests[1024];
static int tl_count = 0;
static void tl_register(const char *name, tl_fn fn) { if (tl_count < 1024) { tl_tests[tl_count].name = name; tl_tests[tl_count].fn = fn; tl_count++; } }

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
  __attribute__((constructor)) static void tl_reg_##name(void) { tl_register(#name, name); } \
  static void name(void)
#define TL_ASSERT(cond) do { if (!(cond)) { tl_puts(1, "TLFAIL " __FILE__ ":" TL_STR(__LINE__) ": " #cond "\n"); tl_exit(1); } } while (0)

static char tl_nonce[80];
static long tl_ids[3];   /* the runner, its parent (tl_build.py), the runner's process group */

/* The test child may not signal (or prlimit) the runner, the build driver or their group: a
 * classic-BPF seccomp filter kills the child with SIGSYS instead (reported as
 * "tampering_signal"); the same program as _runner/tl_guard.py for Python. */
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
  unsigned sig_ids[6] = {(unsigned)tl_ids[0], (unsigned)tl_ids[1], 1u, 0u, 0xFFFFFFFFu, (unsigned)-tl_ids[2]};
  unsigned pid_ids[3] = {(unsigned)tl_ids[0], (unsigned)tl_ids[1], 1u};
  struct tl_bpf p[40];
  int n = 0, hdr = 4 + x86 + 1 + 5 + 2 + 1, sig_at = hdr, pid_at = sig_at + 1 + 6 + 1, kill_at = pid_at + 1 + 3 + 1;
#define TL_OP(c, t, f, kk) do { p[n].code = (c); p[n].jt = (unsigned char)(t); p[n].jf = (unsigned char)(f); p[n].k = (kk); n++; } while (0)
#define TL_TO(label) ((label) - n - 1)
  TL_OP(0x20, 0, 0, 4); TL_OP(0x15, 1, 0, arch); TL_OP(0x06, 0, 0, 0x80000000u); TL_OP(0x20, 0, 0, 0);
  if (x86) TL_OP(0x35, TL_TO(kill_at), 0, 0x40000000u);
  TL_OP(0x15, TL_TO(kill_at), 0, 424 /* pidfd_send_signal */);
  for (int i = 0; i < 5; i++) TL_OP(0x15, TL_TO(sig_at), 0, sig_nr[i]);
  for (int i = 0; i < 2; i++) TL_OP(0x15, TL_TO(pid_at), 0, pid_nr[i]);
  TL_OP(0x06, 0, 0, 0x7FFF0000u);
  TL_OP(0x20, 0, 0, 16); for (int i = 0; i < 6; i++) TL_OP(0x15, TL_TO(kill_at), 0, sig_ids[i]); TL_OP(0x06, 0, 0, 0x7FFF0000u);
  TL_OP(0x20, 0, 0, 16); for (int i = 0; i < 3; i++) TL_OP(0x15, TL_TO(kill_at), 0, pid_ids[i]); TL_OP(0x06, 0, 0, 0x7FFF0000u);
  TL_OP(0x06, 0, 0, 0x80000000u);
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

static void tl_run_one(int i) {
  int fds[2];
  unsigned long long token = 0, got = 0;
  if (tl_sys(SYS_getrandom, (long)&token, sizeof token, 0, 0, 0) != (long)sizeof token || tl_sys(SYS_pipe2, (long)fds, 0, 0, 0, 0) != 0) {
    tl_report("failed", tl_tests[i].name, "setup_failed");
    return;
  }
  token |= 1ULL;
  long pid = tl_sys(SYS_clone, TL_SIGCHLD, 0, 0, 0, 0);
  if (pid == 0) {
    tl_sys(SYS_close, fds[0], 0, 0, 0, 0);
    tl_sys(SYS_close, 3, 0, 0, 0, 0);
    for (volatile char *p = tl_nonce; p < tl_nonce + sizeof tl_nonce; p++) *p = 0;
    tl_guard();
    tl_tests[i].fn();
    tl_write(fds[1], (const char *)&token, sizeof token);
    tl_exit(0);
  }
  tl_sys(SYS_close, fds[1], 0, 0, 0, 0);
  long n = pid < 0 ? -1 : tl_sys(SYS_read, fds[0], (long)&got, sizeof got, 0, 0);
  tl_sys(SYS_close, fds[0], 0, 0, 0, 0);
  int status = 0;
  if (pid < 0 || tl_sys(SYS_wait4, pid, (long)&status, 0, 0, 0) != pid) { tl_report("failed", tl_tests[i].name, "fork_failed"); return; }
  int exited = (status & 0x7f) == 0, code = (status >> 8) & 0xff, sig = status & 0x7f;
  char why[32] = "exit_", num[16];
  if (exited && code == 0 && n == (long)sizeof got && got == token) tl_report("passed", tl_tests[i].name, 0);
  else if (exited && code == 0) tl_report("failed", tl_tests[i].name, "exited_early");
  else if (!exited && sig == 31) tl_report("failed", tl_tests[i].name, "tampering_signal");
  else {
    tl_utoa((unsigned)(exited ? code : sig), num);
    if (!exited) { why[0] = 's'; why[1] = 'i'; why[2] = 'g'; why[3] = '_'; why[4] = 0; }
    size_t k = tl_len(why), j = 0;
    while (num[j] && k < sizeof why - 1) why[k++] = num[j++];
    why[k] = 0;
    tl_report("failed", tl_tests[i].name, why);
  }
}

TL_EXTERN int main(void) {
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
  for (int i = 0; i < tl_count; i++) tl_run_one(i);
  tl_puts(3, tl_nonce); tl_puts(3, " done\n");
  tl_exit(0);
  return 0;
}
#endif
