/* tuneloop's minimal C/C++ test runner (framework "tltest").
 *
 *   #include "tl_test.h"
 *   TL_TEST(adds) { TL_ASSERT(add(1, 2) == 3); }
 *
 * Every test runs in its own forked child (a crash fails that test only) and prints one line
 *   TLTEST <passed|failed> <name> <message>
 * on stdout. main() is provided here; do not define one in the tests. */
#ifndef TL_TEST_H
#define TL_TEST_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

typedef void (*tl_fn)(void);
static struct { const char *name; tl_fn fn; } tl_tests[1024];
static int tl_count = 0;
static void tl_register(const char *name, tl_fn fn) { if (tl_count < 1024) { tl_tests[tl_count].name = name; tl_tests[tl_count].fn = fn; tl_count++; } }

#define TL_TEST(name) static void name(void); \
  __attribute__((constructor)) static void tl_reg_##name(void) { tl_register(#name, name); } \
  static void name(void)
#define TL_ASSERT(cond) do { if (!(cond)) { printf("TLFAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); fflush(stdout); _exit(1); } } while (0)

int main(void) {
  int passed = 0;
  for (int i = 0; i < tl_count; i++) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) { tl_tests[i].fn(); fflush(stdout); _exit(0); }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) < 0) { printf("TLTEST failed %s fork_failed\n", tl_tests[i].name); continue; }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) { printf("TLTEST passed %s\n", tl_tests[i].name); passed++; }
    else if (WIFSIGNALED(status)) printf("TLTEST failed %s signal_%d\n", tl_tests[i].name, WTERMSIG(status));
    else printf("TLTEST failed %s exit_%d\n", tl_tests[i].name, WEXITSTATUS(status));
  }
  printf("TLDONE %d %d\n", passed, tl_count);
  return passed == tl_count ? 0 : 1;
}
#endif
