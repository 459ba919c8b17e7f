/* tuneloop's minimal C/C++ test runner (framework "tltest").
 *
 *   #include "tl_test.h"
 *   TL_TEST(adds) { TL_ASSERT(add(1, 2) == 3); }
 *
 * Every test runs in its own forked child (a crash fails that test only) and prints one line
 *   TLTEST <passed|failed> <name> <message>
 * on stdout. main() is provided here; do not define one in the tests.
 * A test passes only if its function *returns*: the child then writes a per-test random token to a
 * pipe the parent reads; exit(0) / _exit(0) inside the code under test never reaches that write,
 * so an early clean exit is a failure ("exited_early"), not a pass. */
#ifndef TL_TEST_H
#define TL_TEST_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <time.h>

typedef void (*tl_fn)(void);
static struct { const char *name; tl_fn fn; } tl_tests[1024];
static int tl_count = 0;
static void tl_register(const char *name, tl_fn fn) { if (tl_count < 1024) { tl_tests[tl_count].name = name; tl_tests[tl_count].fn = fn; tl_count++; } }

#define TL_TEST(name) static void name(void); \
  __attribute__((constructor)) static void tl_reg_##name(void) { tl_register(#name, name); } \
  static void name(void)
#define TL_ASSERT(cond) do { if (!(cond)) { printf("TLFAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); fflush(stdout); _exit(1); } } while (0)

static unsigned long long tl_token(void) {
  unsigned long long t = 0;
  FILE *f = fopen("/dev/urandom", "rb");
  if (!f || fread(&t, sizeof t, 1, f) != 1) t = ((unsigned long long)getpid() << 32) ^ (unsigned long long)clock();
  if (f) fclose(f);
  return t | 1ULL;
}

int main(void) {
  int passed = 0;
  for (int i = 0; i < tl_count; i++) {
    fflush(stdout);
    int fds[2];
    if (pipe(fds) != 0) { printf("TLTEST failed %s pipe_failed\n", tl_tests[i].name); continue; }
    unsigned long long token = tl_token();
    pid_t pid = fork();
    if (pid == 0) {
      close(fds[0]);
      tl_tests[i].fn();
      fflush(stdout);
      if (write(fds[1], &token, sizeof token) != (ssize_t)sizeof token) _exit(3);
      _exit(0);
    }
    close(fds[1]);
    unsigned long long got = 0;
    ssize_t n = (pid < 0) ? -1 : read(fds[0], &got, sizeof got);
    close(fds[0]);
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) < 0) { printf("TLTEST failed %s fork_failed\n", tl_tests[i].name); continue; }
    int returned = (n == (ssize_t)sizeof got && got == token);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && !returned) printf("TLTEST failed %s exited_early\n", tl_tests[i].name);
    else if (WIFEXITED(status) && WEXITSTATUS(status) == 0) { printf("TLTEST passed %s\n", tl_tests[i].name); passed++; }
    else if (WIFSIGNALED(status)) printf("TLTEST failed %s signal_%d\n", tl_tests[i].name, WTERMSIG(status));
    else printf("TLTEST failed %s exit_%d\n", tl_tests[i].name, WEXITSTATUS(status));
  }
  printf("TLDONE %d %d\n", passed, tl_count);
  return passed == tl_count ? 0 : 1;
}
#endif
