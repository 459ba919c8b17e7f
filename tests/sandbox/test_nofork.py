"""_runner/tl_nofork.py: the filter tl_build installs before the Rust test binary (no toolchain needed:
a Python child under the same filter)."""

import os
import subprocess
import sys

import pytest

from sdk.sandbox._runner import tl_nofork

CHILD = """import os, subprocess, threading
out = []
t = threading.Thread(target=lambda: out.append(2 + 3))
t.start(); t.join()
try:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    forked = "forked"
except OSError as e:
    forked = e.errno
try:
    subprocess.run(["/bin/true"])
    spawned = "spawned"
except OSError as e:
    spawned = e.errno
print(out[0], forked, spawned)
"""


@pytest.mark.skipif(os.uname().machine not in tl_nofork.ARCH, reason="no syscall numbers for this machine")
def test_threads_work_and_no_process_can_be_made():
    got = subprocess.run([sys.executable, "-I", "-c", CHILD], capture_output=True, text=True, timeout=60,
                         preexec_fn=tl_nofork.installer(os.uname().machine))
    assert got.returncode == 0, got.stderr[-2000:]
    assert got.stdout.split() == ["5", "1", "1"]   # the thread ran; fork and spawn: EPERM


def test_an_unknown_machine_gets_no_filter():
    assert tl_nofork.program("sparc") is None and tl_nofork.installer("sparc") is None
