"""The pre-flight check: every node of a Ray cluster that will run a session's trials is asked,
before the first trial, what it would run them with, and compared with this process.

On each live node with a CPU, one task (no CPU of its own, pinned to the node) imports the
evaluator for the session's mode, reports Python's, Ray's and the pinned packages' versions,
hashes the alphaloop package it imports (the one the job sent, unless the node's own copy
shadows it) and the session's data as it reads it from the object store. Anything that differs
from this process fails the session up front, each node named with what differs, before
anything is journaled. Nodes that passed are not asked again in this process (a resume checks
the nodes that joined since).
"""

from __future__ import annotations

import hashlib
import importlib
import logging
import platform
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from alphaloop.exceptions import Unavailable
from alphaloop.placement.cluster import Cluster, connect

if TYPE_CHECKING:
    from ray import ObjectRef

    from alphaloop.market import MarketData

logger = logging.getLogger(__name__)

PREFLIGHT_S = 120.0  # a node's first task starts a worker and unpacks the package: seconds
# What a trial's numbers depend on besides alphaloop itself, by mode: each node must have this
# process's versions (pydantic's too: jobs and outcomes cross the wire as its models).
_PINNED = ("numpy", "pandas", "pydantic", "highspy")
_PINNED_PPO = ("torch", "stable-baselines3", "gymnasium")


class NodeCheck(BaseModel):
    """What one node (or this process) runs trials with."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    node: str  # the node's id (this process: "driver")
    ip: str
    versions: dict[str, str | None]  # Python, Ray and the pinned packages (None: missing)
    code: str  # a hash of the alphaloop package as imported there
    data: str  # a hash of the session's data as read there
    error: str | None = None  # an import that failed


def _data_hash(data: MarketData) -> str:
    """A hash of everything a trial reads of ``data``: its returns, dates, symbols, windows."""
    h = hashlib.sha256()
    h.update(data.returns.tobytes())
    h.update(data.dates.as_unit("ns").asi8.tobytes())
    h.update("\n".join(data.symbols).encode())
    h.update(repr((data.train, data.val, data.test)).encode())
    return h.hexdigest()[:16]


def _code_hash() -> str:
    import alphaloop

    root = Path(alphaloop.__file__).parent
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        h.update(str(path.relative_to(root)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _inspect_here(data: MarketData, mode: str, node: str = "driver", ip: str = "") -> NodeCheck:
    """What this process would run ``mode``'s trials on ``data`` with (a node runs it as a
    task; the driver, for the reference)."""
    from alphaloop.placement.local import preload_for

    error = None
    for name in preload_for(mode):
        try:
            importlib.import_module(name)
        except Exception as err:  # reported with the node's name, not raised in Ray's words
            error = f"cannot import {name}: {err!r}"
            logger.warning("pre-flight on node %s: %s", node, error)
            break
    pinned = _PINNED if mode == "cufolio_only" else (*_PINNED, *_PINNED_PPO)
    import ray

    versions = {
        "python": platform.python_version(),
        "ray": ray.__version__,
        **{dist: _version(dist) for dist in pinned},
    }
    return NodeCheck(
        node=node, ip=ip, versions=versions, code=_code_hash(), data=_data_hash(data), error=error
    )


def _inspect_node(data: MarketData, mode: str) -> NodeCheck:
    import ray

    context = ray.get_runtime_context()
    return _inspect_here(data, mode, context.get_node_id(), ray.util.get_node_ip_address())


def _differences(node: NodeCheck, here: NodeCheck) -> list[str]:
    if node.error:
        return [node.error]
    found = [
        f"{name} {node.versions.get(name) or 'missing'} (here {version})"
        for name, version in here.versions.items()
        if node.versions.get(name) != version
    ]
    if node.code != here.code:
        found.append("it imports another alphaloop than the one sent (its own installed copy?)")
    if node.data != here.data:
        found.append(f"the session's data hashes {node.data} there, {here.data} here")
    return found


def preflight(
    cluster: Cluster, data_ref: ObjectRef[MarketData], data: MarketData, mode: str
) -> None:
    """Checks every live node with a CPU (those not checked yet) can run ``mode``'s trials on
    the session's data (``data_ref``: the data in the object store) exactly as this process
    would.

    Raises:
        Unavailable: naming each node that cannot, and why; or no node has a CPU.
    """
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    here = _inspect_here(data, mode)
    nodes = [n for n in ray.nodes() if n["Alive"] and n["Resources"].get("CPU", 0) > 0]
    if not nodes:
        raise Unavailable(
            f"the Ray cluster at {cluster.address} has no live node with a CPU to run trials on"
        )
    todo = [n for n in nodes if (n["NodeID"], here.data, mode) not in cluster.checked]
    task = ray.remote(num_cpus=0, max_retries=0)(_inspect_node)
    refs = {
        task.options(
            scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)
        ).remote(data_ref, mode): n
        for n in todo
    }
    ready, late = ray.wait(list(refs), num_returns=len(refs), timeout=PREFLIGHT_S)
    problems = []
    for ref in ready:
        node = refs[ref]
        try:
            found = _differences(ray.get(ref), here)
        except ray.exceptions.RayError as err:
            found = [f"no worker could start there: {str(err).splitlines()[0]}"]
        if found:
            problems.append(f"{_name(node)}: {'; '.join(found)}")
        else:
            cluster.checked.add((node["NodeID"], here.data, mode))
    for ref in late:
        ray.cancel(ref, force=True)
        problems.append(f"{_name(refs[ref])}: no answer within {PREFLIGHT_S:g} s")
    if problems:
        raise Unavailable(
            f"nodes of the Ray cluster at {cluster.address} cannot run this session's trials "
            f"as this machine would: {' | '.join(problems)}. Give those nodes the same Python "
            "and packages (install alphaloop's requirements.lock there) or take them out of the "
            "cluster. Nothing was journaled."
        )
    logger.info("pre-flight: %d node(s) of %s ready", len(nodes), cluster.address)


def reach(
    address: str, data: MarketData, mode: str, timeout_s: float
) -> tuple[Cluster, ObjectRef[MarketData]]:
    """Connects to the cluster at ``address`` (within ``timeout_s``), puts ``data`` in its
    object store and checks every node can run ``mode``'s trials on it; returns the connection
    and the data's object ref. A failure leaves this process disconnected.

    Raises:
        Unavailable: see :func:`probe` and :func:`preflight`.
    """
    cluster = connect(address, timeout_s)
    import ray

    try:
        data_ref = ray.put(data)
        preflight(cluster, data_ref, data, mode)
    except BaseException:
        cluster.close()
        raise
    return cluster, data_ref


def _name(node: dict[str, Any]) -> str:
    return f"node {node['NodeManagerAddress']} (id {node['NodeID'][:12]})"
