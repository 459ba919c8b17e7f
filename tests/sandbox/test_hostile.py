"""The hostile suite (issue 3, part 7): one hostile program per test, on the bubblewrap
backend. Each asserts the program was contained, that nothing of the sandbox's uids is left
running afterwards, and that the host is unchanged. Containment is proven by the *test file*
(trusted code inside the sandbox) asserting what the hostile code managed to do, or by the
status when the program cannot finish."""

from __future__ import annotations

import os
import time

import pytest

from sdk.sandbox import ExecRequest, ExecStatus, Limits

LIM = Limits(timeout_s=15, cpu_s=3, memory_mb=512, processes=32, scratch_mb=32)  # loops end on CPU


@pytest.fixture
def bw(bubblewrap_sandbox):
    yield bubblewrap_sandbox
    strays = bubblewrap_sandbox.stray_processes()
    assert strays == [], [open(f"/proc/{p}/cmdline", "rb").read() for p in strays]


def probe(body: str, check: str, limits: Limits = LIM, cold: bool = False) -> ExecRequest:
    """``probe()`` runs ``body`` and returns something; ``check`` asserts on ``r = candidate()``.
    Without files a ``script`` request takes the warm (pre-forked) path; ``cold`` adds a support
    file, which forces one fresh bubblewrap per execution."""
    sol = "def probe():\n" + "".join("    " + line + "\n" for line in body.strip("\n").splitlines())
    test = "def check(candidate):\n    r = candidate()\n" + "".join("    " + l + "\n" for l in check.strip("\n").splitlines())
    files = {"cold.txt": "force a cold start"} if cold else {}
    return ExecRequest(framework="script", solution=sol, entry_point="probe", tests={"t.py": test}, limits=limits, files=files)


@pytest.mark.parametrize("cold", [False, True], ids=["warm", "cold"])
def test_fork_bomb(bw, cold):
    t = time.monotonic()
    res = bw.run_one(probe("import os\nwhile True:\n    os.fork()", "assert False", cold=cold))
    assert res.status in (ExecStatus.RUNTIME_ERROR, ExecStatus.TIMEOUT, ExecStatus.FAILED)
    assert time.monotonic() - t < LIM.timeout_s + 30   # ended by the limits, not by the bomb running out


def test_thread_bomb(bw):
    res = bw.run_one(probe("import threading, time\nn = 0\ntry:\n    while True:\n        threading.Thread(target=time.sleep, args=(60,), daemon=True).start()\n        n += 1\nexcept (RuntimeError, MemoryError):\n    return n",
                           f"assert r <= {LIM.processes}, r"))
    assert res.status == ExecStatus.OK, res


def test_infinite_loop(bw):
    assert bw.run_one(probe("while True:\n    pass", "assert False")).status == ExecStatus.TIMEOUT


def test_ten_gb_allocation(bw):
    assert bw.run_one(probe("return bytearray(10 * 1024 ** 3)", "assert False")).status == ExecStatus.MEMORY_LIMIT


def test_five_gb_file(bw):
    body = "import signal\nsignal.signal(signal.SIGXFSZ, signal.SIG_IGN)\nn = 0\ntry:\n    with open('/tmp/big', 'wb') as f:\n        for _ in range(5 * 1024):\n            n += f.write(b'x' * (1 << 20))\nexcept OSError:\n    pass\nreturn n"
    res = bw.run_one(probe(body, f"assert r <= {LIM.file_size_mb << 20}, r"))
    assert res.status == ExecStatus.OK, res


@pytest.mark.parametrize("where,cap_mb", [("/tmp", LIM.scratch_mb), ("/dev/shm", 16)])
def test_filling_tmp_and_shm(bw, where, cap_mb):
    body = (f"import os, signal\nsignal.signal(signal.SIGXFSZ, signal.SIG_IGN)\ntotal = 0\n"
            f"for i in range(1000):\n    try:\n        with open('{where}/f%d' % i, 'wb') as f:\n"
            f"            for _ in range(8):\n                total += f.write(b'x' * (1 << 20))\n"
            f"    except OSError:\n        break\nreturn total")
    res = bw.run_one(probe(body, f"assert 0 < r <= {(cap_mb + 1) << 20}, r"))
    assert res.status == ExecStatus.OK, res


@pytest.mark.parametrize("path", ["/etc/shadow", "/root/.ssh/id_rsa", "/root/.ssh", "/work/main/pyproject.toml"])
def test_host_secrets_are_invisible(bw, path):
    body = f"import os\ntry:\n    return os.listdir('{path}') if os.path.isdir('{path}') else open('{path}', 'rb').read()[:10]\nexcept OSError as e:\n    return type(e).__name__"
    res = bw.run_one(probe(body, "assert r in ('FileNotFoundError', 'PermissionError'), r"))
    assert res.status == ExecStatus.OK, res


def test_parent_environment_and_proc(bw):
    # the caller's pid and environment are outside the sandbox's pid namespace
    body = (f"import os\nseen = [p for p in os.listdir('/proc') if p.isdigit()]\n"
            f"env = ''\ntry:\n    env = open('/proc/{os.getpid()}/environ', 'rb').read().decode(errors='replace')\n"
            f"except OSError:\n    pass\nreturn len(seen), env, dict(os.environ)")
    check = "n, env, mine = r\nassert n < 10, n\nassert 'PATH=' not in env or 'VIRTUAL_ENV' not in env\nassert set(mine) <= {'PATH','HOME','TMPDIR','USER','LOGNAME','LANG','LC_ALL','MALLOC_ARENA_MAX','PYTHONDONTWRITEBYTECODE','PYTEST_DISABLE_PLUGIN_AUTOLOAD','PWD'}, mine"
    res = bw.run_one(probe(body, check))
    assert res.status == ExecStatus.OK, res


@pytest.mark.parametrize("addr,cold", [(("127.0.0.1", 5432), False), (("1.1.1.1", 80), False), (("127.0.0.1", 5432), True)])
def test_network_is_unreachable(bw, addr, cold):
    body = f"import socket\ntry:\n    s = socket.create_connection({addr!r}, timeout=2)\n    return 'connected'\nexcept OSError as e:\n    return type(e).__name__"
    res = bw.run_one(probe(body, "assert r != 'connected', r", cold=cold))
    assert res.status == ExecStatus.OK, res


@pytest.mark.parametrize("target,cold", [(-1, False), (1, False), (-1, True)])
def test_kill_minus_one_and_init(bw, target, cold):
    # a well-behaved job in the other slot must survive the hostile one
    slow = probe("import time\ntime.sleep(1.0)\nreturn 7", "assert r == 7")
    hostile = probe(f"import os, signal, time\nos.kill({target}, signal.SIGKILL)\ntime.sleep(0.5)\nreturn 'alive'",
                    "assert True", cold=cold)
    res_slow, res_hostile = bw.run([slow, hostile])
    assert res_slow.status == ExecStatus.OK, res_slow
    assert res_hostile.status != ExecStatus.SANDBOX_ERROR
    assert os.getppid() > 0  # and we are still here
    # a slot whose warm server was killed serves the next request from a fresh one
    again = bw.run([probe("return 5", "assert r == 5"), probe("return 6", "assert r == 6")])
    assert [r.status for r in again] == [ExecStatus.OK, ExecStatus.OK], again


def test_deleting_the_callers_files(bw, tmp_path):
    canary = tmp_path / "canary.txt"
    canary.write_text("keep")
    os.chmod(tmp_path, 0o777)
    os.chmod(canary, 0o666)
    body = f"import os, shutil\ntry:\n    os.remove({str(canary)!r})\n    return 'deleted'\nexcept OSError as e:\n    shutil.rmtree({os.getcwd()!r}, ignore_errors=True)\n    return type(e).__name__"
    res = bw.run_one(probe(body, "assert r != 'deleted'"))
    assert res.status == ExecStatus.OK, res
    assert canary.read_text() == "keep" and os.path.exists("pyproject.toml")


def test_one_gb_to_stdout(bw):
    res = bw.run_one(probe("import sys\nfor _ in range(1024):\n    sys.stdout.write('x' * (1 << 20))", "assert False"))
    assert res.status == ExecStatus.OUTPUT_LIMIT and res.stdout_truncated
    assert len(res.stdout) <= LIM.output_bytes   # killed by the flood guard, not the timeout (status above)


@pytest.mark.parametrize("cold", [False, True], ids=["warm", "cold"])
def test_setsid_grandchild_outliving_the_timeout(bw, cold):
    body = ("import os, time\nif os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n        time.sleep(60)\n    os._exit(0)\n"
            "time.sleep(60)")
    res = bw.run_one(probe(body, "assert False", limits=LIM.model_copy(update={"timeout_s": 1.5}), cold=cold))
    assert res.status == ExecStatus.TIMEOUT
    # the fixture asserts that no process of the sandbox uids is left


def test_ptrace_is_denied(bw):
    body = ("import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
            "pid = os.fork()\nif pid == 0:\n    import time\n    time.sleep(5)\n    os._exit(0)\n"
            "rc = libc.ptrace(16, pid, 0, 0)\nerr = ctypes.get_errno()\nos.kill(pid, 9)\nreturn rc, err")
    res = bw.run_one(probe(body, "import errno\nassert r == (-1, errno.EPERM), r"))
    assert res.status == ExecStatus.OK, res


def test_warm_server_cannot_be_traced_or_read(bw):
    # the pre-forked server is the request's parent: ptrace and /proc/<ppid>/mem must both fail
    body = ("import ctypes, os\nlibc = ctypes.CDLL(None, use_errno=True)\n"
            "rc = libc.ptrace(16, os.getppid(), 0, 0)\nerr = ctypes.get_errno()\n"
            "try:\n    open('/proc/%d/mem' % os.getppid(), 'rb').read(1)\n    mem = 'read'\n"
            "except OSError as e:\n    mem = type(e).__name__\nreturn rc, err, mem")
    res = bw.run_one(probe(body, "import errno\nassert r[:2] == (-1, errno.EPERM) and r[2] != 'read', r"))
    assert res.status == ExecStatus.OK, res


def test_warm_requests_do_not_see_each_other(bw):
    writer = probe("open('/tmp/left.txt', 'w').write('secret')\nopen('/dev/shm/x', 'w').write('y')\nreturn 1", "assert r == 1")
    reader = probe("import os\nreturn sorted(os.listdir('/tmp')), sorted(os.listdir('/dev/shm'))",
                   "assert 'left.txt' not in r[0] and 'x' not in r[1], r")
    assert bw.run_one(writer).status == ExecStatus.OK
    for _ in range(2):   # both slots
        assert bw.run_one(reader).status == ExecStatus.OK


def test_cold_run_keeps_the_slots_warm_server(bw):
    # a mixed workload (script requests warm, pytest requests cold) on the same slot uids:
    # the cold run's clean-up must kill its own leftovers but not the warm server
    bw.run([probe("return 1", "assert r == 1"), probe("return 2", "assert r == 2")])
    servers = bw.backend.warm.server_pids()
    leftover = probe("import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(60)\nreturn 3", "assert r == 3", cold=True)
    assert [r.status for r in bw.run([leftover, leftover.model_copy(update={"solution": leftover.solution + "\n"})])] == [ExecStatus.OK] * 2
    assert servers and servers <= bw.backend.warm.server_pids()


def test_forked_allocations_are_bounded_as_a_whole(bw):
    # each of 6 processes stays under RLIMIT_AS (512 MiB) but together they want 6 x 300 MiB;
    # with a slot cgroup (where writable) the tree is killed; without one each process is
    # still bounded. Either way the host keeps its memory and nothing is left running.
    body = ("import os, time\npids = []\nfor _ in range(5):\n    pid = os.fork()\n    if pid == 0:\n"
            "        b = bytearray(300 << 20)\n        time.sleep(3)\n        os._exit(0)\n    pids.append(pid)\n"
            "b = bytearray(300 << 20)\nreturn sum(os.waitpid(p, 0)[1] != 0 for p in pids)")
    res = bw.run_one(probe(body, "assert r == 0, r", limits=LIM.model_copy(update={"memory_mb": 512})))
    warm = bw.backend.warm
    cgroups = [z.cgroup for z in warm._servers.values() if z.cgroup is not None]
    if cgroups:
        assert res.status in (ExecStatus.MEMORY_LIMIT, ExecStatus.FAILED), res
    else:
        assert res.status == ExecStatus.OK, res


# -- issue 14: cross-task leak attempts on warm slots (both slots see each writer's leftovers) --
SECRET = "tl-secret-7f3a9c"
LEAKS = [  # (name, writer body, reader body returning True when it found the earlier task's data)
    ("mode_000_folder", f"import os\nos.makedirs('/tmp/h/d')\nopen('/tmp/h/d/s', 'w').write('{SECRET}')\nos.chmod('/tmp/h/d', 0)\nos.chmod('/tmp/h', 0)\nreturn 1",
     "import os\nreturn os.path.exists('/tmp/h')"),
    ("dev_shm_file", f"open('/dev/shm/s', 'w').write('{SECRET}')\nreturn 1", "import os\nreturn os.listdir('/dev/shm') != []"),
    ("sysv_shm", "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nreturn libc.shmget(0x7e57, 300 << 20, 0o1666)",
     "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nreturn libc.shmget(0x7e57, 0, 0o666) >= 0"),
    ("sysv_msg_queue", "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nreturn libc.msgget(0x7e58, 0o1666)",
     "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nreturn libc.msgget(0x7e58, 0o666) >= 0"),
    ("sysv_semaphore", "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nreturn libc.semget(0x7e59, 1, 0o1666)",
     "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nreturn libc.semget(0x7e59, 1, 0o666) >= 0"),
    ("posix_mqueue", "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nreturn libc.mq_open(b'/tlq', 0o100 | 2, 0o666, None)",
     "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nreturn libc.mq_open(b'/tlq', 2) >= 0"),
    ("leftover_process", f"import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(0.3)\n    open('/tmp/late', 'w').write('{SECRET}')\n    time.sleep(30)\nreturn 1",
     "import os, time\ntime.sleep(0.5)\nreturn os.path.exists('/tmp/late') or len([p for p in os.listdir('/proc') if p.isdigit()]) > 6"),
    ("module_state", f"import json\njson.LEAK = '{SECRET}'\nreturn 1", "import json\nreturn hasattr(json, 'LEAK')"),
    ("fifo_and_socket", "import os, socket\nos.mkfifo('/tmp/f')\ns = socket.socket(socket.AF_UNIX)\ns.bind('\\0tl-leak')\ns.listen()\nreturn 1",
     "import os, socket\ns = socket.socket(socket.AF_UNIX)\ntry:\n    s.connect('\\0tl-leak')\n    return True\nexcept OSError:\n    return os.path.exists('/tmp/f')"),
    ("proc_self_mem", "return 1",  # the reader scans its own memory for the writer's test source:
     # the needle and a never-written control are built alike, so only a leak makes them differ
     f"def count(n):\n    maps = open('/proc/self/maps').read().splitlines()\n    k = 0\n"
     f"    try:\n        mem = open('/proc/self/mem', 'rb')\n    except PermissionError:\n        return 0\n"
     f"    for line in maps:\n        a, b = [int(x, 16) for x in line.split()[0].split('-')]\n"
     f"        if 'r' not in line.split()[1] or b - a > 1 << 28:\n            continue\n"
     f"        try:\n            mem.seek(a)\n            k += mem.read(b - a).count(n)\n"
     f"        except (OSError, ValueError, OverflowError):\n            pass\n    return k\n"
     f"return count(('{SECRET[::-1]}'[::-1] + '-test').encode()) > count(('{SECRET[::-1]}'[::-1] + '-tset').encode())"),
    ("immutable_tmp_run", "import os\nos.makedirs('/tmp/run/x', exist_ok=True)\nos.chmod('/tmp/run/x', 0)\nos.chmod('/tmp/run', 0o500)\nreturn 1",
     "import os\nreturn sorted(os.listdir('/tmp')) != ['run'] or os.path.exists('/tmp/run/x')"),
]


@pytest.mark.parametrize("name,writer,reader", LEAKS, ids=[n for n, *_ in LEAKS])
def test_warm_slot_forgets_the_earlier_task(bw, name, writer, reader):
    # the writer's check carries a marker the reader looks for in its own memory
    w = probe(writer, f"assert '{SECRET}-test' and True")
    assert bw.run_one(w).status in (ExecStatus.OK, ExecStatus.FAILED), name
    for _ in range(2):   # the next task on each slot
        res = bw.run_one(probe(reader, "assert r is False, r"))
        assert res.status == ExecStatus.OK, (name, res)
    honest = bw.run([probe("return 5", "assert r == 5"), probe("return 6", "assert r == 6")])
    assert [r.status for r in honest] == [ExecStatus.OK] * 2, honest


def test_sysv_shared_memory_is_unavailable(bw):
    # 3 x 300 MiB of System V shm used to pass a 512 MiB memory_mb and stay after the request
    body = "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nreturn [libc.shmget(0, 300 << 20, 0o1600) for _ in range(3)]"
    res = bw.run_one(probe(body, "assert r == [-1, -1, -1], r", limits=LIM.model_copy(update={"memory_mb": 512})))
    assert res.status == ExecStatus.OK, res


# -- issue 14: what one request changes in its processes never reaches the next one -----------
# The writer changes its candidate process (environment, builtins, signal dispositions, rlimits,
# umask, an open descriptor, cwd, recursion limit, sys.path, niceness) and, from its check, the
# supervisor (environment, builtins, recursion limit, a signal disposition). Each later request
# on the slot starts the candidate afresh; the supervisor, long-lived since issue 14's throughput
# work, is replaced when a request changed it (``_runner/tl_state.py``).
STATE_WRITER = (
    "import builtins, os, resource, signal, sys\n"
    f"os.environ['TL_LEAK'] = '{SECRET}'\nbuiltins.TL_LEAK = '{SECRET}'\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\nsignal.signal(signal.SIGUSR1, signal.SIG_IGN)\n"
    "resource.setrlimit(resource.RLIMIT_NOFILE, (77, 77))\nos.umask(0o067)\n"
    "os.dup2(os.open('/dev/null', os.O_RDONLY), 37)\nos.chdir('/')\nsys.setrecursionlimit(4321)\n"
    "sys.path.append('/tmp/tl-leak')\nos.nice(3)\nreturn 1")
STATE_READER = (
    "import builtins, os, resource, signal, sys\nfound = []\n"
    "if os.environ.get('TL_LEAK') or hasattr(builtins, 'TL_LEAK'):\n    found.append('environment/builtins')\n"
    "if signal.SIG_IGN in (signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGUSR1)):\n    found.append('signals')\n"
    "if resource.getrlimit(resource.RLIMIT_NOFILE) == (77, 77):\n    found.append('rlimit')\n"
    "mask = os.umask(0o022)\nos.umask(mask)\nif mask == 0o067:\n    found.append('umask')\n"
    "try:\n    os.fstat(37)\n    found.append('descriptor')\nexcept OSError:\n    pass\n"
    "if os.getcwd() == '/':\n    found.append('cwd')\n"
    "if sys.getrecursionlimit() == 4321 or '/tmp/tl-leak' in sys.path:\n    found.append('interpreter')\n"
    "if os.getpriority(os.PRIO_PROCESS, 0) != os.getpriority(os.PRIO_PROCESS, os.getppid()):\n    found.append('nice')\n"
    "return found")
# and what a test changes in the long-lived supervisor that no namespace shows (it is then replaced)
SUPERVISOR_PATCHES = {   # name: (what the writer's test does, what the reader's test asserts)
    "class_attribute": ("import json.decoder\njson.decoder.JSONDecoder.tl_leak = 1",
                        "import json.decoder\nassert not hasattr(json.decoder.JSONDecoder, 'tl_leak')"),
    "function_defaults": ("import json\njson.dumps.__kwdefaults__ = dict(json.dumps.__kwdefaults__ or {}, sort_keys=True)",
                          "import json\nassert json.dumps({'b': 1, 'a': 2}) == '{\"b\": 1, \"a\": 2}'"),
    "thread_left_running": ("import _thread, time\n_thread.start_new_thread(time.sleep, (30,))",
                            "import os\nassert len(os.listdir('/proc/self/task')) == 1"),
    "environ_behind_putenv": ("import os\nos.environ._data[b'TL_SUP_LEAK2'] = b'1'", "import os\nassert 'TL_SUP_LEAK2' not in os.environ"),
}
SUPERVISOR_WRITE = ("import builtins, os, signal, sys\nos.environ['TL_SUP_LEAK'] = '1'\nbuiltins.TL_SUP_LEAK = 1\n"
                    "sys.setrecursionlimit(4321)\nsignal.signal(signal.SIGUSR1, signal.SIG_IGN)\nassert r == 1")
SUPERVISOR_READ = ("import builtins, os, signal, sys\nassert r == [], r\n"
                   "assert 'TL_SUP_LEAK' not in os.environ and not hasattr(builtins, 'TL_SUP_LEAK')\n"
                   "assert sys.getrecursionlimit() != 4321 and signal.getsignal(signal.SIGUSR1) is not signal.SIG_IGN")


def test_warm_slot_forgets_process_state(bw):
    assert bw.run_one(probe(STATE_WRITER, SUPERVISOR_WRITE)).status == ExecStatus.OK
    for _ in range(2):   # the next task on each slot
        res = bw.run_one(probe(STATE_READER, SUPERVISOR_READ))
        assert res.status == ExecStatus.OK, res


@pytest.mark.parametrize("name", list(SUPERVISOR_PATCHES))
def test_warm_supervisor_forgets_patches_and_threads(bw, name):
    writer, reader = SUPERVISOR_PATCHES[name]
    assert bw.run_one(probe("return 1", writer + "\nassert r == 1")).status == ExecStatus.OK
    for _ in range(2):   # the next task on each slot
        res = bw.run_one(probe("return 1", reader))
        assert res.status == ExecStatus.OK, (name, res)


def test_warm_supervisor_forgets_instance_attributes(bw):
    # tl_state compares the tags of the __dict__ of every instance a module holds (was a strict xfail)
    assert bw.run_one(probe("return 1", "import sys\nsys.stdout.tl_leak = 1\nassert r == 1")).status == ExecStatus.OK
    for _ in range(2):
        res = bw.run_one(probe("return 1", "import sys\nassert not hasattr(sys.stdout, 'tl_leak')"))
        assert res.status == ExecStatus.OK, res


@pytest.mark.parametrize("target", ["os.getppid()", "parent(os.getppid())", "-os.getpgid(0)", "sibling()"],
                         ids=["parent", "grandparent", "process_group", "sibling_supervisor"])
def test_warm_candidate_cannot_stop_its_judges(bw, target):
    # the kill-guard's ids come from the warm server's recorded chain plus the candidate's parent, or
    # the long-lived supervisor beside it (both forked by the server; issue 14)
    body = ("import os, signal\ndef parent(pid):\n    return int(open('/proc/%d/stat' % pid).read().rsplit(')', 1)[1].split()[1])\n"
            "def sibling():\n    return [int(p) for p in os.listdir('/proc') if p.isdigit() and int(p) != os.getpid()"
            " and parent(int(p)) == os.getppid()][0]\n"
            f"os.kill({target}, signal.SIGSTOP)\nreturn 'sent'")
    res = bw.run_one(probe(body, "assert r == 'sent'"))
    assert res.status == ExecStatus.FAILED and "runner_tampering" in res.flags, res
    again = bw.run([probe("return 5", "assert r == 5"), probe("return 6", "assert r == 6")])
    assert [r.status for r in again] == [ExecStatus.OK, ExecStatus.OK], again
