"""Cold-run entry point inside the sandbox, with the sandbox's Python (``-I -S -B``).

usage: tl_runner.py --fd N [--path DIR]

This process is the trusted harness (:mod:`tl_harness`). Before it reads anything it makes
itself non-dumpable and forks the candidate process (:mod:`tl_candidate`), which closes every
descriptor but its own pipes. Only then is the request read from stdin (one JSON object:
nonce, mode, tests, target, entry point, limits): tests and nonce exist in this process only.
Every event goes to fd N as ``<nonce> <json>\\n``; the parent ignores lines without the nonce
and treats a run without the final ``end`` and ``harness`` events as failed.

Stdlib only (this file must run on any Python >= 3.8); pytest is imported from this folder.
"""

import json
import os
import sys
import time


def _args(argv):
    opts, i = {"fd": None, "path": None}, 0
    while i < len(argv):
        if argv[i].startswith("--") and argv[i][2:] in opts and i + 1 < len(argv):
            opts[argv[i][2:]] = argv[i + 1]
            i += 2
        else:
            i += 1
    return opts


def _read_all(fd):
    chunks = []
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            break
        chunks.append(chunk)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, fd)
    os.close(null)
    return b"".join(chunks)


def main():
    """Fork the candidate, read the request, run the harness; events go to ``--fd``."""
    if "--io-fds" in sys.argv:   # stdio pipes passed beside bwrap's /dev/null stdio (bwrap.run): onto 0-2
        for target, fd in enumerate(int(x) for x in sys.argv[sys.argv.index("--io-fds") + 1].split(",")):
            os.dup2(fd, target)
            os.close(fd)
    opts = _args(sys.argv[1:])
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:0] = [here]
    sys.dont_write_bytecode = True
    import tl_harness  # noqa: E402
    import tl_early  # noqa: E402
    import tl_remote  # noqa: E402

    tl_harness.not_dumpable()
    tl_early.subreaper()   # every process the solution starts stays a descendant of this one
    remote = tl_remote.Remote()
    started = time.monotonic()
    payload = json.loads(_read_all(0).decode("utf-8"))
    if opts["path"]:
        payload["path"] = list(payload.get("path", [])) + [opts["path"]]
    chan = tl_harness.Channel(int(opts["fd"]), payload["nonce"])
    try:
        if payload.get("mode") == "repo":   # the whole working folder is the candidate (change tasks)
            import tl_repohost  # noqa: E402
            tl_repohost.main(chan, payload, remote)
        else:
            tl_harness.run(chan, payload, remote, started)
    finally:
        sys.stdout.flush()
        sys.stderr.flush()


if __name__ == "__main__":
    main()
