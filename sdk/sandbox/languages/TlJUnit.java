// tuneloop's JUnit launcher (issue 14): the verdict leaves on a pipe, tagged with a nonce that
// only this class ever held, never in a report file the code under test could write.
//
// tl_build.py starts the JVM with a result pipe on fd 3 and the run's nonce on fd 4 (written and
// closed by the driver). main() reads the nonce before any test or solution class is initialised
// (so the code under test finds fd 4 drained), discovers the tests under the class folder given
// as the argument, and reports every test exactly once on fd 3:
//   "<nonce> passed|failed|skipped <class>/<reportingName> [reason]", then "<nonce> done".
// A test whose container failed (a static initialiser that threw, @BeforeAll) is reported failed
// with the container's reason. The JVM then leaves through Runtime.halt, so shutdown hooks of the
// solution never run after the verdicts. Lines without the nonce (anything the code under test
// writes to /dev/fd/3 or stdout) count for nothing; no report directory is read.
// Not covered: the nonce lives in this JVM, so code that scans the JVM's own memory
// (/proc/self/mem, sun.misc.Unsafe, a heap dump) could find it; the static scan flags those.
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Paths;
import java.util.HashSet;
import java.util.Set;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.engine.support.descriptor.MethodSource;
import org.junit.platform.launcher.Launcher;
import org.junit.platform.launcher.LauncherDiscoveryRequest;
import org.junit.platform.launcher.TestExecutionListener;
import org.junit.platform.launcher.TestIdentifier;
import org.junit.platform.launcher.TestPlan;
import org.junit.platform.launcher.core.LauncherDiscoveryRequestBuilder;
import org.junit.platform.launcher.core.LauncherFactory;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClasspathRoots;

public final class TlJUnit {
  private TlJUnit() { }

  public static void main(String[] args) throws IOException {
    byte[] buf = new byte[128];
    int got = 0;
    try (FileInputStream in = new FileInputStream("/dev/fd/4")) {   // a pipe: plain reads, no seeking
      for (int n; got < buf.length && (n = in.read(buf, got, buf.length - got)) > 0; ) got += n;
    }
    String nonce = new String(buf, 0, got, StandardCharsets.US_ASCII).trim();
    if (nonce.length() < 16) {
      System.err.println("TlJUnit: no nonce on fd 4 (run through tl_build.py)");
      Runtime.getRuntime().halt(2);
    }
    Reporter reporter = new Reporter(nonce, new FileOutputStream("/dev/fd/3"));
    nonce = null;
    LauncherDiscoveryRequest request = LauncherDiscoveryRequestBuilder.request()
        .selectors(selectClasspathRoots(Set.of(Paths.get(args[0]).toAbsolutePath()))).build();
    Launcher launcher = LauncherFactory.create();
    launcher.execute(request, reporter);
    reporter.line("done");
    System.out.flush();
    System.err.flush();
    Runtime.getRuntime().halt(reporter.failed ? 1 : 0);
  }

  private static final class Reporter implements TestExecutionListener {
    private final byte[] tag;
    private final FileOutputStream out;
    private final Set<String> done = new HashSet<>();
    private TestPlan plan;
    boolean failed;

    Reporter(String nonce, FileOutputStream out) {
      this.tag = (nonce + " ").getBytes(StandardCharsets.US_ASCII);
      this.out = out;
    }

    synchronized void line(String text) {
      try {
        byte[] body = (text.replace('\n', ' ').replace('\r', ' ') + "\n").getBytes(StandardCharsets.UTF_8);
        byte[] all = new byte[tag.length + body.length];
        System.arraycopy(tag, 0, all, 0, tag.length);
        System.arraycopy(body, 0, all, tag.length, body.length);
        out.write(all);
        out.flush();
      } catch (IOException e) {
        Runtime.getRuntime().halt(3);
      }
    }

    @Override public void testPlanExecutionStarted(TestPlan testPlan) { plan = testPlan; }

    @Override public void executionSkipped(TestIdentifier id, String reason) {
      for (TestIdentifier t : tests(id)) report(t, "skipped", null);
    }

    @Override public void executionFinished(TestIdentifier id, TestExecutionResult result) {
      boolean ok = result.getStatus() == TestExecutionResult.Status.SUCCESSFUL;
      String why = result.getThrowable().map(TlJUnit::describe).orElse(ok ? null : result.getStatus().toString());
      if (id.isTest()) {
        report(id, ok ? "passed" : "failed", why);
      } else if (!ok) {
        for (TestIdentifier t : tests(id)) report(t, "failed", why);
      }
    }

    private Set<TestIdentifier> tests(TestIdentifier id) {
      Set<TestIdentifier> out = new HashSet<>();
      if (id.isTest()) out.add(id);
      if (plan != null) for (TestIdentifier d : plan.getDescendants(id)) if (d.isTest()) out.add(d);
      return out;
    }

    private void report(TestIdentifier id, String verdict, String why) {
      if (!done.add(id.getUniqueId())) return;
      if (!"passed".equals(verdict) && !"skipped".equals(verdict)) failed = true;
      String cls = id.getSource().filter(s -> s instanceof MethodSource)
          .map(s -> ((MethodSource) s).getClassName()).orElse("?");
      String name = (cls + "/" + id.getLegacyReportingName()).replaceAll("\\s", "_");
      line(verdict + " " + name + (why == null ? "" : " " + why));
    }
  }

  private static String describe(Throwable t) {
    String s = t.getClass().getName() + ": " + t.getMessage();
    return s.length() > 500 ? s.substring(0, 500) : s;
  }
}
