// tuneloop's JUnit launcher (issue 14): the verdict leaves on a pipe, each line signed with a key
// that only this class ever held, never in a report file the code under test could write.
//
// tl_build.py starts the JVM with a result pipe on fd 3 and 32 random key bytes on fd 4 (written
// and closed by the driver). main() reads the key before any test or solution class is
// initialised (so the code under test finds fd 4 drained), then the tests' class files that follow
// it on fd 4 (round 6: a solution read its answers from a test's class file on disk, so tl_build.py
// deletes them before this JVM starts), defines those from memory and runs them (with none, it
// discovers the tests under the class folder given as the argument), and reports every test
// exactly once on fd 3:
//   "<mac> <seq> passed|failed|skipped <class>/<reportingName> [reason]", then "<mac> <seq> done",
// where seq counts lines from 0 and mac is the first 16 bytes (hex) of SHA-256(key + "<seq> ...").
// A test whose container failed (a static initialiser that threw, @BeforeAll) is reported failed
// with the container's reason. The JVM then leaves through Runtime.halt, so shutdown hooks of the
// solution never run after the verdicts. The driver drops, and reports as forged (flag
// runner_tampering), any line it cannot verify; no report directory is read.
// The key is 32 random bytes with nothing around them to recognise: a scan of the JVM's memory
// (/proc/self/mem, sun.misc.Unsafe) for the old hex nonce found it and earned 1.0; a scan for the
// key has no pattern to match and no way to test a guess (one wrong line is flagged).
// Not covered: code that walks the JVM's heap structures to this Reporter object could still
// take the key; the static scan flags /proc/self/mem and Unsafe.
import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.platform.engine.DiscoverySelector;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.engine.support.descriptor.MethodSource;
import org.junit.platform.launcher.Launcher;
import org.junit.platform.launcher.LauncherDiscoveryRequest;
import org.junit.platform.launcher.TestExecutionListener;
import org.junit.platform.launcher.TestIdentifier;
import org.junit.platform.launcher.TestPlan;
import org.junit.platform.launcher.core.LauncherDiscoveryRequestBuilder;
import org.junit.platform.launcher.core.LauncherFactory;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClasspathRoots;

public final class TlJUnit {
  private TlJUnit() { }

  public static void main(String[] args) throws Exception {
    byte[] key = new byte[32];
    Map<String, byte[]> tests = new HashMap<>();
    try (DataInputStream in = new DataInputStream(new BufferedInputStream(new FileInputStream("/dev/fd/4")))) {
      in.readFully(key);   // a pipe: plain reads, no seeking
      for (int hi; (hi = in.read()) >= 0; ) {   // then each test class: u16 name length, name, u32 length, bytes
        byte[] name = new byte[(hi << 8) | in.readUnsignedByte()];
        in.readFully(name);
        byte[] body = new byte[in.readInt()];
        in.readFully(body);
        tests.put(new String(name, StandardCharsets.UTF_8), body);
      }
    } catch (EOFException e) {
      System.err.println("TlJUnit: no key on fd 4 (run through tl_build.py)");
      Runtime.getRuntime().halt(2);
    }
    Reporter reporter = new Reporter(key, MessageDigest.getInstance("SHA-256"), new FileOutputStream("/dev/fd/3"));
    Path root = Paths.get(args[0]).toAbsolutePath();
    List<DiscoverySelector> selectors = new ArrayList<>();
    if (tests.isEmpty()) {
      selectors.add(selectClasspathRoots(Set.of(root)).get(0));
    } else {   // the tests' classes were never on disk while this JVM ran: defined here from memory
      TaskLoader loader = new TaskLoader(root, tests, TlJUnit.class.getClassLoader());
      Thread.currentThread().setContextClassLoader(loader);
      for (String name : new ArrayList<>(tests.keySet())) {
        Class<?> c = loader.loadClass(name);
        if (!name.contains("$")) selectors.add(selectClass(c));
      }
    }
    LauncherDiscoveryRequest request = LauncherDiscoveryRequestBuilder.request().selectors(selectors).build();
    Launcher launcher = LauncherFactory.create();
    launcher.execute(request, reporter);
    reporter.line("done");
    System.out.flush();
    System.err.flush();
    Runtime.getRuntime().halt(reporter.failed ? 1 : 0);
  }

  // Defines the tests' classes from memory (each map entry is dropped once defined) and the task's
  // other classes from the class folder itself, child-first, so both share one runtime package
  // (package-private access between a test and the solution keeps working).
  private static final class TaskLoader extends ClassLoader {
    private final Path root;
    private final Map<String, byte[]> memory;

    TaskLoader(Path root, Map<String, byte[]> memory, ClassLoader parent) {
      super(parent);
      this.root = root;
      this.memory = memory;
    }

    @Override protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
      synchronized (getClassLoadingLock(name)) {
        Class<?> c = findLoadedClass(name);
        if (c == null) {
          byte[] body = memory.remove(name);
          Path file = root.resolve(name.replace('.', '/') + ".class");
          if (body == null && !name.equals("TlJUnit") && !name.startsWith("TlJUnit$") && Files.isRegularFile(file)) {
            try {
              body = Files.readAllBytes(file);
            } catch (IOException e) {
              throw new ClassNotFoundException(name, e);
            }
          }
          c = body == null ? super.loadClass(name, false) : defineClass(name, body, 0, body.length);
        }
        if (resolve) resolveClass(c);
        return c;
      }
    }
  }

  private static final class Reporter implements TestExecutionListener {
    private static final char[] HEX = "0123456789abcdef".toCharArray();
    private final byte[] key;
    private final MessageDigest sha;
    private final FileOutputStream out;
    private final Set<String> done = new HashSet<>();
    private TestPlan plan;
    private long seq;
    boolean failed;

    Reporter(byte[] key, MessageDigest sha, FileOutputStream out) {
      this.key = key;
      this.sha = sha;
      this.out = out;
    }

    synchronized void line(String text) {
      try {
        byte[] body = ((seq++) + " " + text.replace('\n', ' ').replace('\r', ' ')).getBytes(StandardCharsets.UTF_8);
        sha.reset();
        sha.update(key);
        byte[] d = sha.digest(body);
        StringBuilder all = new StringBuilder(34);
        for (int i = 0; i < 16; i++) all.append(HEX[(d[i] >> 4) & 15]).append(HEX[d[i] & 15]);
        byte[] mac = all.append(' ').toString().getBytes(StandardCharsets.US_ASCII);
        byte[] line = new byte[mac.length + body.length + 1];
        System.arraycopy(mac, 0, line, 0, mac.length);
        System.arraycopy(body, 0, line, mac.length, body.length);
        line[line.length - 1] = '\n';
        out.write(line);
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
