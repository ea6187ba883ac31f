"""A Ray cluster a session runs its trials on: reached within a bound, checked node by node, and
sent the code, before the session journals anything.

Ray's own ``ray.init`` waits about fourteen minutes for an address that does not answer (and
for a cluster that wants a token this process lacks, for good), printing a warning every half
minute. So the address is probed first, within ``ALPHALOOP_RAY_CONNECT_TIMEOUT`` seconds: a
TCP connection, then the head's GCS asked for its cluster id over gRPC (Ray Client's server,
for ``ray://``, asked for a ready channel). Only an address that answers goes to ``ray.init``.
``auto`` is probed at the address ``RAY_ADDRESS`` names; without one, ``ray.init("auto")``
finds the cluster last started on this machine itself (and fails at once when there is none).
Only Ray's public API is used (and grpc's, for the probe), so the ``ray`` extra is a range of
releases, not one.

The session's code travels with it: the Ray job this process starts has a ``runtime_env`` whose
``py_modules`` is this process's ``alphaloop`` package, so a node needs alphaloop's
dependencies, not alphaloop. What must match for a trial to give the same numbers anywhere is
checked on every node with a CPU before the first trial (:mod:`.preflight`).

Where trials run is decided once (:func:`resolve_address`): an address named by the session,
``local`` for this machine, or, when it names none, ``RAY_ADDRESS``, as ``ray.init()`` and
Ray's command-line tools read it.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeGuard

from alphaloop.exceptions import AlphaloopError, Unavailable
from alphaloop.spec import AUTO, CLIENT, LOCAL, check_address

if TYPE_CHECKING:
    from grpc import Channel

    from alphaloop.settings import Settings

logger = logging.getLogger(__name__)

THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
_NEEDS_RAY = "Ray runs trials on a cluster: pip install 'alphaloop[ray]' (or run without it)"


def on_ray(address: str | None) -> TypeGuard[str]:
    """Whether trials placed at ``address`` run on a Ray cluster (not on this machine)."""
    return address is not None and address != LOCAL


def resolve_address(asked: str | None, settings: Settings) -> str | None:
    """Where a new session runs its trials: the address it names, or ``RAY_ADDRESS`` when it
    names none (``ray.init()``'s rule), or None for this machine. ``local`` is kept: it says
    this machine even where ``RAY_ADDRESS`` is set."""
    if asked is not None:
        return asked
    try:
        return check_address(settings.ray_address)
    except ValueError as err:
        raise ValueError(f"RAY_ADDRESS: {err}") from None


def where(address: str | None) -> str:
    """How the journal names the place trials at ``address`` run: ``local``, ``ray:HOST:PORT``
    or ``ray://HOST:PORT`` (for ``auto``, the address it found: see :attr:`Cluster.where`)."""
    if not on_ray(address):
        return LOCAL
    return address if address.startswith(CLIENT) else f"ray:{address}"


# --- reaching the head ------------------------------------------------------------------------


def _unreachable(address: str, why: str, timeout_s: float) -> Unavailable:
    return Unavailable(
        f"cannot reach the Ray cluster at {address}: {why}. Check the address (`ray status` on "
        "the head prints it; the head's --port, 6379 by default, or ray://HOST:10001 through Ray "
        f"Client), start the cluster (`ray start --head`), raise ALPHALOOP_RAY_CONNECT_TIMEOUT "
        f"(now {timeout_s:g} s) for a slow network, or run on this machine with --ray-address "
        "local. Nothing was journaled."
    )


def _gcs_address(address: str) -> str | None:
    """The address to probe: ``address``, or for ``auto`` the one ``RAY_ADDRESS`` names (None
    when it names none: Ray finds the cluster last started on this machine itself)."""
    if address != AUTO:
        return address
    return os.environ.get("RAY_ADDRESS") or None


def probe(address: str, timeout_s: float) -> str:
    """Checks within ``timeout_s`` seconds that a Ray cluster answers at ``address`` and that
    this process may use it; returns the address ``ray.init`` is to be given.

    Raises:
        Unavailable: nothing answers, something else answers, or the cluster wants a
            token this process lacks (the message says which, and what to do).
    """
    deadline = time.monotonic() + timeout_s
    target = _gcs_address(address)
    if target is None:  # ``ray.init("auto")`` finds it, or fails at once when there is none
        return AUTO
    host, _, port = target.removeprefix(CLIENT).rpartition(":")
    try:
        socket.create_connection((host, int(port)), timeout=timeout_s).close()
    except ConnectionRefusedError:
        why = "nothing listens there (connection refused)"
        raise _unreachable(address, why, timeout_s) from None
    except TimeoutError:
        raise _unreachable(address, f"no answer within {timeout_s:g} s", timeout_s) from None
    except OSError as err:
        raise _unreachable(address, str(err), timeout_s) from None
    left = max(deadline - time.monotonic(), 0.1)
    if target.startswith(CLIENT):
        _probe_client(address, target.removeprefix(CLIENT), left, timeout_s)
    else:
        _probe_gcs(address, target, left, timeout_s)
    return target


# The GCS's own method: asked with an empty request, it answers with the cluster's id. Called by
# its wire name through grpc's public API (Ray's generated stubs are not its public API).
_GET_CLUSTER_ID = "/ray.rpc.NodeInfoGcsService/GetClusterId"


def _grpc() -> ModuleType:
    try:
        import grpc
    except ImportError:
        raise AlphaloopError(
            f"{_NEEDS_RAY} (its `default` and `client` extras reach a cluster)"
        ) from None
    return grpc


def _channel(grpc: ModuleType, target: str) -> Channel:
    """A channel to ``target``, over TLS with the certificates Ray's documented variables name
    when ``RAY_USE_TLS`` is on (as Ray's own clients connect)."""
    if os.environ.get("RAY_USE_TLS", "0").lower() not in ("1", "true"):
        return grpc.insecure_channel(target)

    def read(name: str) -> bytes | None:
        path = os.environ.get(name)
        return Path(path).read_bytes() if path else None

    credentials = grpc.ssl_channel_credentials(
        root_certificates=read("RAY_TLS_CA_CERT"),
        private_key=read("RAY_TLS_SERVER_KEY"),
        certificate_chain=read("RAY_TLS_SERVER_CERT"),
    )
    return grpc.secure_channel(target, credentials)


def _token_auth_here() -> bool:
    """Whether this process authenticates to Ray with a token (``RAY_AUTH_MODE=token``)."""
    return os.environ.get("RAY_AUTH_MODE", "").lower() == "token"


def _probe_gcs(address: str, target: str, left: float, timeout_s: float) -> None:
    """Asks the GCS at ``target`` for its cluster id, within ``left`` seconds. The probe sends
    no token: a GCS that refuses it for want of one has answered as a Ray GCS, and
    ``ray.init`` sends the token when this process has one."""
    grpc = _grpc()
    channel = _channel(grpc, target)
    try:
        ask = channel.unary_unary(
            _GET_CLUSTER_ID, request_serializer=bytes, response_deserializer=bytes
        )
        ask(b"", timeout=left, wait_for_ready=True)  # the empty GetClusterIdRequest
    except grpc.RpcError as err:
        code = err.code()
        if code == grpc.StatusCode.UNAUTHENTICATED:
            if _token_auth_here():
                return
            raise Unavailable(
                f"the Ray cluster at {address} wants a token this process does not send: set "
                "RAY_AUTH_MODE=token and give its token as its nodes have it (RAY_AUTH_TOKEN, "
                "or the file ~/.ray/auth_token or RAY_AUTH_TOKEN_PATH). Nothing was journaled."
            ) from None
        if code == grpc.StatusCode.UNIMPLEMENTED:
            raise Unavailable(
                f"{address} answers, but not as a Ray head's GCS (its --port, 6379 by "
                f"default); for a Ray Client server use ray://{address}. Nothing was journaled."
            ) from None
        why = "no answer from a Ray GCS" if code == grpc.StatusCode.DEADLINE_EXCEEDED else code.name
        raise _unreachable(address, f"{why} within {timeout_s:g} s", timeout_s) from None
    finally:
        channel.close()


def _probe_client(address: str, target: str, left: float, timeout_s: float) -> None:
    grpc = _grpc()
    channel = _channel(grpc, target)
    try:
        grpc.channel_ready_future(channel).result(timeout=left)
    except grpc.FutureTimeoutError:
        why = f"no answer from a Ray Client server within {timeout_s:g} s"
        raise _unreachable(address, why, timeout_s) from None
    finally:
        channel.close()


# --- the connection ---------------------------------------------------------------------------


@dataclass
class Cluster:
    """This process's connection to a Ray cluster."""

    address: str  # as the session names it
    owned: bool  # this module connected (and disconnects); else a runtime found running
    found: str  # where it answered: the GCS address ``auto`` stood for, else ``address``
    # (node id, data hash, mode) of the nodes that passed the pre-flight check
    checked: set[tuple[str, str, str]] = field(default_factory=set)

    @property
    def where(self) -> str:
        """How the journal names this cluster (see :func:`where`; ``auto`` resolved)."""
        return where(self.found if self.address == AUTO else self.address)

    def close(self) -> None:
        """Disconnects when this module connected; a runtime found running is left running."""
        global _current
        if _current is self:
            _current = None
        if self.owned:
            import ray

            ray.shutdown()


_current: Cluster | None = None


def connect(address: str, timeout_s: float) -> Cluster:
    """This process's connection to the cluster at ``address``: the one it has, or a new one
    made once :func:`probe` found the cluster answering. A Ray runtime some other code of this
    process started is used as it is (``auto``, or its own address), and left running.

    Raises:
        Unavailable: see :func:`probe`; or this process is connected elsewhere.
    """
    global _current
    try:
        import ray
    except ImportError:
        raise AlphaloopError(_NEEDS_RAY) from None
    if _current is not None and _current.address == address and ray.is_initialized():
        return _current
    if _current is not None:
        _current.close()
    if ray.is_initialized():
        gcs = ray.get_runtime_context().gcs_address
        if address not in (AUTO, gcs):
            raise Unavailable(
                f"this process is already connected to the Ray cluster at {gcs}, not {address}; "
                "give that address (or auto). Nothing was journaled."
            )
        _current = Cluster(address, owned=False, found=gcs)
        return _current
    target = probe(address, timeout_s)
    try:
        ray.init(
            address=target,
            runtime_env=runtime_env(),
            log_to_driver=False,
            logging_level=logging.WARNING,
        )
    except (ConnectionError, RuntimeError, ValueError) as err:
        if target == AUTO:
            raise Unavailable(
                "--ray-address auto found no Ray cluster on this machine and RAY_ADDRESS is "
                "unset: start one with `ray start --head`, or give the head's HOST:PORT. "
                "Nothing was journaled."
            ) from None
        raise _unreachable(address, str(err), timeout_s) from None
    found = ray.get_runtime_context().gcs_address if target == AUTO else target
    _current = Cluster(address, owned=True, found=found)
    return _current


def runtime_env() -> dict[str, Any]:
    """What the session's Ray job gives every task: this process's ``alphaloop`` package (Ray
    uploads it once per content, and each node unpacks it once), and one thread per worker.
    (Ray takes a local package at the job level only: a runtime this process found running
    keeps the environment its own ``ray.init`` gave it.)"""
    import alphaloop

    return {
        "py_modules": [str(Path(alphaloop.__file__).parent)],
        "excludes": ["__pycache__/", "*.pyc"],
        "env_vars": dict.fromkeys(THREAD_VARS, "1"),
    }
