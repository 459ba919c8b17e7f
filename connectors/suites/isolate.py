"""Run the repository's own pytest suite (``tasks build``'s traced run and its re-runs) inside bubblewrap.

The suite is the company's code, but a ``conftest.py`` runs as the caller's uid: on the host it could write
anywhere that uid can and reach every service on the network. Where bubblewrap works (probed once per
process, with the same command shape) the suite command is wrapped so that:

- the whole filesystem is seen read-only (``--ro-bind / /``); the repository is seen through an overlay
  whose writes go to an invisible tmpfs (``--overlay-src --tmp-overlay``, where the kernel allows it:
  probed once), so a suite that writes beside its tests still runs and nothing it writes reaches the
  host; without overlays the repository is read-only (bytecode is not written and pytest's cache
  provider is off, so most suites need not write there);
- ``/tmp`` and ``/run`` are fresh tmpfs (no host socket under them: PostgreSQL's, X11's...), the caller's
  home folder(s) an empty read-only tmpfs (no ``~/.netrc``, ``~/.ssh``, cloud credentials); the paths the run
  needs that lie under them (the repository, the interpreter's prefixes and ``sys.path``, the
  test-dependency environment) are bound back read-only, and the run's temporary folder (plugin, report)
  writable; ``TMPDIR`` is ``/tmp``;
- ``/dev`` and ``/proc`` are fresh (a new pid namespace), no network (``--unshare-net``: even 127.0.0.1 is a
  fresh loopback), all capabilities dropped, no new user namespace inside, a new session, killed with its
  parent.

Where bubblewrap does not work, ``auto`` runs the suite as before and logs one warning saying why;
``on`` raises; ``off`` never wraps.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import pwd
import subprocess
import tempfile

from sdk.errors import SourceError

MODES = ("auto", "on", "off")
log = logging.getLogger("tuneloop.connectors.pytest")
_warned: list[str] = []


def isolate_command(cmd: list[str], env: dict[str, str], *, mode: str, cwd: str, tmp: str,
                    keep: tuple[str, ...]) -> tuple[list[str], dict[str, str]]:
    """The suite command and environment to run, wrapped in bubblewrap when ``mode`` asks and bwrap works.

    Args:
        cmd: the unwrapped argv (``cmd[0]`` the interpreter); env: its environment (not modified).
        cwd: the folder the suite runs in (the repository): bound back when hidden, and bwrap's ``--chdir``.
        mode: ``auto`` (wrap when bwrap works, else warn once and run as given), ``on`` (wrap or raise),
            ``off`` (never wrap).
        tmp: the run's temporary folder (plugin, report): the only host folder left writable.
        keep: host paths the run reads (the repository, package parent, appended ``sys.path``); bound
            back read-only when they lie under a hidden folder (``/tmp``, ``/run``, the home folder).
    Returns:
        ``(argv, env)`` (``TMPDIR`` is ``/tmp`` when wrapped).
    Raises:
        SourceError: ``mode`` is ``on`` and bubblewrap cannot run here, or ``mode`` is not one of :data:`MODES`.
    """
    if mode not in MODES:
        raise SourceError(f"isolate must be one of {', '.join(MODES)}, not {mode!r}", "set options.isolate: auto")
    if mode == "off":
        return cmd, env
    bwrap, why = _bwrap()
    if bwrap is None:
        if mode == "on":
            raise SourceError(f"options.isolate is on, but bubblewrap cannot run here: {why}",
                              "enable unprivileged user namespaces, or set options.isolate: off to run the "
                              "suite on this machine unisolated")
        if not _warned:
            _warned.append(why)
            log.warning("pytest source: the suite runs on this machine UNISOLATED (its conftest can write "
                        "where you can and reach the network): bubblewrap cannot run here: %s", why)
        return cmd, env
    paths = (cwd, *keep, *_interpreter_paths(cmd[0]))
    return [*wrap_argv(bwrap, tmp, paths, cwd, overlay=_overlay_ok(bwrap)), *cmd], {**env, "TMPDIR": "/tmp"}


def wrap_argv(bwrap: str, tmp: str, keep: tuple[str, ...], cwd: str = "/", *, overlay: bool = False) -> list[str]:
    """The bwrap argv up to and including ``--`` (see the module docstring). Pure; paths need not exist
    except ``tmp`` and the kept ones actually bound (those that do not exist are skipped). ``overlay``:
    ``cwd`` (the repository) is mounted as an overlay whose writes land in a tmpfs dropped at exit."""
    homes = _homes()
    hidden = ["/tmp", "/run", *homes]
    a = [bwrap, "--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
         "--unshare-cgroup-try", "--disable-userns", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
         "--ro-bind", "/", "/", "--dev", "/dev", "--tmpfs", "/dev/shm", "--proc", "/proc",
         "--tmpfs", "/tmp", "--tmpfs", "/run"]
    for home in homes:
        a += ["--tmpfs", home]
    tmp = os.path.abspath(tmp)
    bound: list[str] = []
    for path in sorted({os.path.abspath(p) for p in keep if p}, key=len):
        if (not os.path.exists(path) or not any(_under(path, h) for h in hidden) or _under(path, tmp)
                or any(_under(path, b) for b in bound)):
            continue
        bound.append(path)
        a += ["--ro-bind", path, path]
    a += ["--bind", tmp, tmp]
    if overlay and os.path.abspath(cwd) != "/":
        a += ["--overlay-src", os.path.abspath(cwd), "--tmp-overlay", os.path.abspath(cwd)]
    for home in homes:
        a += ["--remount-ro", home]
    return a + ["--chdir", os.path.abspath(cwd), "--"]


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _homes() -> list[str]:
    """The caller's home folders (``$HOME`` and the password entry's), parents first; never ``/`` or a
    folder holding ``/tmp``."""
    found = {os.environ.get("HOME", "")}
    try:
        found.add(pwd.getpwuid(os.getuid()).pw_dir)
    except KeyError:
        pass
    homes = {os.path.abspath(h) for h in found if h and os.path.isabs(h) and os.path.isdir(h)}
    homes = {h for h in homes if h != "/" and not _under("/tmp", h) and not _under(h, "/tmp")}
    return sorted((h for h in homes if not any(h != o and _under(h, o) for o in homes)), key=len)


@functools.lru_cache(maxsize=None)
def _bwrap() -> tuple[str | None, str]:
    """``(bwrap path, "")`` when the wrapped command shape runs ``true`` here, else ``(None, why)``; once
    per process."""
    try:
        from sdk.sandbox.bwrap import bwrap_binary  # noqa: PLC0415 - only when a suite is run

        binary = bwrap_binary()
    except Exception as exc:  # noqa: BLE001 - SandboxError or an import failure: bwrap unusable either way
        return None, str(exc)
    with tempfile.TemporaryDirectory(prefix="tuneloop-bwrap-probe-") as tmp:
        try:
            out = subprocess.run([*wrap_argv(binary, tmp, ()), "true"], capture_output=True, text=True,
                                 timeout=30, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")}, cwd="/")
        except (OSError, subprocess.TimeoutExpired) as exc:
            return None, str(exc)
    if out.returncode != 0:
        return None, out.stderr.strip()[-300:] or f"exit {out.returncode}"
    return binary, ""


@functools.lru_cache(maxsize=None)
def _overlay_ok(binary: str) -> bool:
    """Whether bwrap can mount an overlay (``--tmp-overlay``) here: a write into an overlaid folder
    succeeds inside and leaves the host folder unchanged; once per process."""
    with tempfile.TemporaryDirectory(prefix="tuneloop-bwrap-overlay-") as tmp:
        repo = os.path.join(tmp, "repo")
        os.mkdir(repo)
        try:
            out = subprocess.run([*wrap_argv(binary, tmp, (repo,), repo, overlay=True), "sh", "-c", "echo x > probe"],
                                 capture_output=True, timeout=30, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
                                 cwd="/")
        except (OSError, subprocess.TimeoutExpired):
            return False
        return out.returncode == 0 and not os.path.exists(os.path.join(repo, "probe"))


@functools.lru_cache(maxsize=None)
def _interpreter_paths(python: str) -> tuple[str, ...]:
    """The folders ``python`` runs from (prefixes, resolved executable's prefix, ``sys.path``), asked of it
    once; ``()`` when it cannot be asked (the suite run then reports its own error)."""
    code = ("import json, os, sys; print(json.dumps([sys.prefix, sys.base_prefix, sys.exec_prefix, "
            "os.path.dirname(os.path.dirname(os.path.realpath(sys.executable)))] + sys.path))")
    try:
        out = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=60,
                             env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")})
        paths = json.loads(out.stdout) if out.returncode == 0 else []
    except (OSError, subprocess.TimeoutExpired, ValueError):
        return ()
    return tuple(p for p in paths if isinstance(p, str) and p)
