"""After a version is published to a server: check it is the version the registry holds (V3).

:func:`verify_served` asks a running tuneloop server (the CPU server of :mod:`sdk.serve.server`,
over any ``httpx``-compatible client) three things: it lists the version, the digest of the files
it loaded equals the registry's, and its probe log-probabilities match the ones recorded from the
trained model at registration. Any difference stops with a message (field case V3: a server
still answering with a step-0 adapter, or an empty copied checkpoint).
"""

from __future__ import annotations

from typing import Any

from feedback.registry import VersionRecord
from sdk.serve.preflight import ServeError, check_probe


def verify_served(client: Any, version: VersionRecord, atol: float = 1e-3) -> None:
    """Check that the server behind ``client`` serves ``version`` as registered.

    Args:
        client: an ``httpx.Client`` (or FastAPI ``TestClient``) whose base URL is the server.
        version: the registry's record (its ``adapter_sha256`` and ``probe``).
        atol: tolerance on each probe log-probability, in nats.
    Raises:
        ServeError: the version is not listed (with what is, and why it was refused if it was),
            its digest differs, or its probe differs.
    """
    listed = client.get("/v1/models").json()
    served = {m["id"]: m.get("sha256") for m in listed["data"]}
    if version.label not in served:
        why = listed.get("refused", {}).get(version.label)
        raise ServeError(f"the server does not list {version.label} (it serves {', '.join(sorted(served)) or 'nothing'})"
                         + (f": it refused it: {why}" if why else ""),
                         "refresh the server's routes (POST /v1/tuneloop/refresh) and check the adapter folder")
    if served[version.label] != version.adapter_sha256:
        raise ServeError(f"{version.label} on the server has sha256 {str(served[version.label])[:12]}, the registry "
                         f"{version.adapter_sha256[:12]}", "reload the version on the server from the registered folder")
    if version.probe:
        got = client.get("/v1/tuneloop/probe", params={"model": version.label}).json()
        check_probe(version.probe["logprobs"], got["logprobs"], atol)
