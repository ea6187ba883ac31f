"""A real Ray cluster of several nodes on one machine, in a network namespace of its own whose only
interface is loopback: Ray's services bind nowhere else, and the cluster cannot meet another.

Each node is a ``ray start --block`` in its own process group (its raylet, agents and workers
stay in it), so a node is killed whole with one signal. Every process the namespace holds was
started here, and :meth:`LoopbackCluster.close` kills them all, then deletes the namespace and
the nodes' files, whatever happened before. Needs root and ``ip`` (iproute2).

The nodes and the drivers run with Ray's token authentication (Ray's default for a new
cluster), the token in the environment rather than in ``~/.ray``, and with fast node-death
detection (a node missing its health checks for about two seconds is dead) so a test that
kills a node waits seconds, not the half minute Ray's defaults take.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PORT = 6379
CLIENT_PORT = 10001  # Ray Client's server on the head (ray://127.0.0.1:10001)
RAY = str(Path(sys.executable).with_name("ray"))


def available() -> str | None:
    """Why a loopback cluster cannot be started here, or None."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "ip (iproute2) is not installed"
    if not Path(RAY).exists():
        return "Ray is not installed (pip install 'alphaloop[ray]')"
    return None


@dataclass
class Node:
    process: subprocess.Popen
    log: Path
    files: Path  # its --temp-dir (sessions, logs)

    @property
    def pgid(self) -> int:
        return self.process.pid  # started with start_new_session: it leads its group


class LoopbackCluster:
    """A head and more nodes, each with ``cpus`` CPUs, at ``127.0.0.1:6379`` in a namespace."""

    def __init__(self) -> None:
        self.name = f"alr-{secrets.token_hex(4)}"
        # Short: Ray's socket paths must fit in 107 characters.
        self.root = Path(tempfile.mkdtemp(prefix="alr-"))
        self.address = f"127.0.0.1:{PORT}"
        # Nothing of another Ray this process ran (ray.init leaves RAY_CLIENT_MODE and the like
        # in the environment) reaches the nodes or the drivers.
        inherited = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
        self.env = {
            **inherited,
            "PYTHONPATH": os.pathsep.join(
                p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p
            ),
            "RAY_AUTH_MODE": "token",
            "RAY_AUTH_TOKEN": secrets.token_hex(32),
            "RAY_USAGE_STATS_ENABLED": "0",
            "RAY_health_check_period_ms": "500",
            "RAY_health_check_timeout_ms": "500",
            "RAY_health_check_failure_threshold": "4",
        }
        self.nodes: list[Node] = []
        self._netns_inode: int | None = None

    def start(
        self, cpus: Sequence[int] = (1, 1), node_env: dict[str, str] | None = None
    ) -> LoopbackCluster:
        """Creates the namespace and starts a head with ``cpus[0]`` CPUs and one node for each
        further entry (``node_env``: extra variables of those); returns once all have joined."""
        subprocess.run(["ip", "netns", "add", self.name], check=True)
        self._netns_inode = os.stat(f"/run/netns/{self.name}").st_ino
        self.exec(["ip", "link", "set", "lo", "up"], check=True)
        head = ["--head", "--port", str(PORT), "--include-dashboard", "false"]
        # All at once: a node keeps asking for the head until it answers.
        started = [self.add_node(cpus[0], head, wait=False)]
        started += [self.add_node(n, wait=False, **(node_env or {})) for n in cpus[1:]]
        for node in started:
            self._wait_until_up(node)
        self._wait_for_port(CLIENT_PORT)  # the head starts Ray Client's server after itself
        return self

    def _wait_for_port(self, port: int, timeout_s: float = 120.0) -> None:
        """Waits until something in the namespace accepts connections on ``port``."""
        code = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=1).close()"
        deadline = time.monotonic() + timeout_s
        while self.exec([sys.executable, "-c", code], capture_output=True).returncode != 0:
            if time.monotonic() > deadline:
                raise RuntimeError(f"nothing listens on port {port} of the cluster's namespace")
            time.sleep(0.5)

    def add_node(
        self, cpus: int, args: Sequence[str] = (), *, wait: bool = True, **env: str
    ) -> Node:
        """Starts a node with ``cpus`` CPUs (``env``: its own extra variables) and, unless
        told not to ``wait``, waits until it has joined."""
        i = len(self.nodes)
        log = self.root / f"node{i}.log"
        join = list(args) or ["--address", self.address]
        cmd = [
            RAY, "start", *join, "--node-ip-address", "127.0.0.1", "--num-cpus", str(cpus),
            "--temp-dir", str(self.root / f"n{i}"), "--block",
        ]  # fmt: skip
        with log.open("wb") as out:
            process = subprocess.Popen(
                ["ip", "netns", "exec", self.name, *cmd],
                env={**self.env, **env},
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        node = Node(process, log, self.root / f"n{i}")
        self.nodes.append(node)
        if wait:
            self._wait_until_up(node)
        return node

    def exec(
        self, cmd: Sequence[str], env: dict[str, str] | None = None, **run: object
    ) -> subprocess.CompletedProcess:
        """Runs ``cmd`` in the namespace with the cluster's environment (and ``env``)."""
        return subprocess.run(  # type: ignore[call-overload]
            ["ip", "netns", "exec", self.name, *cmd], env={**self.env, **(env or {})}, **run
        )

    def popen(self, cmd: Sequence[str], env: dict[str, str], **popen: object) -> subprocess.Popen:
        return subprocess.Popen(  # type: ignore[call-overload]
            ["ip", "netns", "exec", self.name, *cmd], env={**self.env, **env}, **popen
        )

    def _wait_until_up(self, node: Node, timeout_s: float = 120.0) -> None:
        """Waits for ``ray start`` to say the node runs (it has joined the cluster then)."""
        deadline = time.monotonic() + timeout_s
        while b"block forever" not in node.log.read_bytes():
            if node.process.poll() is not None or time.monotonic() > deadline:
                tail = node.log.read_text(errors="replace")[-3000:]
                raise RuntimeError(f"a Ray node did not start:\n{tail}")
            time.sleep(0.2)

    def kill_node(self, node: Node) -> None:
        """Kills a node whole at once (its raylet, agents and workers): a machine lost."""
        for pid in self.processes_of(node):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        node.process.wait(10)

    def processes_of(self, node: Node) -> list[int]:
        """The processes of ``node``: its ``ray start`` and every process below it (Ray puts
        its workers in process groups of their own, so the group alone would miss them)."""
        parents = {}
        for pid in self.pids():
            try:
                stat = Path(f"/proc/{pid}/stat").read_text()
            except OSError:
                continue
            parents[pid] = int(stat.rsplit(")", 1)[1].split()[1])
        found = []
        for pid in parents:
            up = pid
            while up in parents and up != node.pgid:
                up = parents[up]
            if up == node.pgid:
                found.append(pid)
        return found

    def pids(self) -> list[int]:
        """Every process in the namespace (all of them started here)."""
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                if os.stat(entry / "ns" / "net").st_ino == self._netns_inode:
                    found.append(int(entry.name))
            except OSError:  # gone meanwhile, or not ours to read
                continue
        return found

    def workers_running(self, name: str = "ray::run_on_ray") -> list[int]:
        """The Ray worker processes of the namespace running a task named ``name`` now."""
        running = []
        for pid in self.pids():
            try:
                title = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()
            except OSError:
                continue
            if title.startswith(name):
                running.append(pid)
        return running

    def close(self) -> None:
        """Kills every process of the cluster and deletes the namespace and the nodes' files."""
        for node in self.nodes:
            try:
                os.killpg(node.pgid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self._netns_inode is not None:
            for _ in range(50):  # anything that left its group (a driver, a reaper)
                pids = self.pids()
                if not pids:
                    break
                for pid in pids:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                time.sleep(0.1)
        for node in self.nodes:
            try:
                node.process.wait(10)
            except subprocess.TimeoutExpired:
                pass
        subprocess.run(["ip", "netns", "del", self.name], check=False)
        shutil.rmtree(self.root, ignore_errors=True)
