"""Which Docker `sam local` talks to, and the project's own dockerd where there is none.

A user's own Docker is used as it is: `DOCKER_HOST` when it is set (and it must answer), else
/var/run/docker.sock when it answers. Otherwise `clockless engine up` starts Debian's dockerd as
root with a socket, data root and exec root of its own, the vfs storage driver (no overlay
mounts needed) and no iptables rules; `engine down` stops it and the containerd it started.

The project's dockerd can never pull: its HTTP(S) proxy is a closed port on loopback, so a
registry lookup fails at once, and the attempt is a line of its log (`pull_attempts` reads them,
which the container tests assert empty). Like `local up`, the state file only says what was
started: a process is stopped only when it is proven to be that dockerd.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final
from urllib.parse import urlparse

from clockless_tools.errors import ToolError
from clockless_tools.template.loader import PROJECT_ROOT

ENGINE_DIR: Final = PROJECT_ROOT / ".clockless" / "engine"
STATE_FILE: Final = ENGINE_DIR / "engine.json"
LOG_FILE: Final = ENGINE_DIR / "dockerd.log"
SYSTEM_SOCKET: Final = Path("/var/run/docker.sock")
# Nothing listens on the discard port: every registry request dockerd makes is refused at once.
NO_REGISTRY_PROXY: Final = "http://127.0.0.1:9"
# What dockerd 20.10 logs when anything asks it for an image it does not hold.
PULL_MARKERS: Final = ("/images/create", "proxyconnect", "Attempting next endpoint for pull")
START_TIMEOUT_SECONDS: Final = 60.0
STOP_TIMEOUT_SECONDS: Final = 30.0


class EngineError(ToolError, RuntimeError):
    """The engine cannot be found or started; the message is one line saying why and what to do."""


@dataclass(frozen=True)
class Engine:
    """A Docker that answers: its `DOCKER_HOST` value, and whose it is."""

    host: str
    ours: bool
    where: str

    def environment(self) -> dict[str, str]:
        """os.environ for docker and SAM CLI, pointed at this engine."""
        return {**os.environ, "DOCKER_HOST": self.host}


def _data_root() -> Path:
    """Images and containers (vfs keeps a full copy per layer: hundreds of MB), outside the checkout
    so no linter or search walks them; kept between runs, so an image built once stays built."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    digest = hashlib.sha256(str(ENGINE_DIR).encode()).hexdigest()[:10]
    return Path(base) / "clockless" / f"engine-{digest}"


def _short_dir() -> Path:
    """Socket and exec root, outside the checkout: a unix socket's path holds at most 107 bytes,
    and containerd's sockets live under the exec root. One per checkout (the data root's hash)."""
    digest = hashlib.sha256(str(ENGINE_DIR).encode()).hexdigest()[:10]
    return Path("/tmp") / f"clockless-engine-{digest}"  # noqa: S108 - a per-checkout name, root's own


def _answers(host: str, timeout: float = 2.0) -> bool:
    """Whether the Docker API at `host` (unix:// or tcp://) answers its ping."""
    url = urlparse(host)
    try:
        if url.scheme == "unix":
            probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            probe.settimeout(timeout)
            probe.connect(url.path)
        elif url.scheme in ("tcp", "http"):
            probe = socket.create_connection((url.hostname or "127.0.0.1", url.port or 2375), timeout=timeout)
        else:
            return False
        with probe:
            probe.sendall(b"GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n")
            answer = probe.recv(4096)
    except OSError:
        return False
    return answer.startswith(b"HTTP/1.") and answer.rstrip().endswith(b"OK")


def _read_state() -> dict[str, object] | None:
    try:
        state = json.loads(STATE_FILE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return state if isinstance(state, dict) else None


def _is_our_dockerd(pid: int, data_root: str) -> bool:
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return bool(command) and command[0].endswith(b"dockerd") and data_root.encode() in command


def our_engine() -> tuple[int, Engine] | None:
    """The project's dockerd, when the state file names a live one that answers."""
    state = _read_state()
    if state is None:
        return None
    pid, host, data_root = state.get("pid"), state.get("host"), state.get("data_root")
    if not (isinstance(pid, int) and isinstance(host, str) and isinstance(data_root, str)):
        return None
    if not _is_our_dockerd(pid, data_root) or not _answers(host):
        return None
    return pid, Engine(host, ours=True, where=f"the project's dockerd (pid {pid}, {host})")


def find_engine() -> Engine | None:
    """The Docker to use: DOCKER_HOST, the system's socket, the project's dockerd; None if none answers."""
    host = os.environ.get("DOCKER_HOST", "")
    if host:
        if not _answers(host):
            raise EngineError(f"DOCKER_HOST={host} does not answer: start that Docker, or unset DOCKER_HOST")
        return Engine(host, ours=False, where=f"DOCKER_HOST={host}")
    system = f"unix://{SYSTEM_SOCKET}"
    if _answers(system):
        return Engine(system, ours=False, where=f"your Docker ({SYSTEM_SOCKET})")
    ours = our_engine()
    return ours[1] if ours else None


def docker(engine: Engine, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """The docker command on `engine`; with `check`, a failure is an EngineError naming its last line."""
    command = shutil.which("docker")
    if command is None:
        raise EngineError("no docker command on PATH: `make engine` installs Debian's docker.io")
    result = subprocess.run([command, *args], env=engine.environment(), capture_output=True, text=True, check=False)
    if check and result.returncode != 0:
        last = (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise EngineError(f"docker {args[0]} failed: {last}")
    return result


# How long a bridge may go without an address: a CI run once read an empty gateway from a dockerd
# that had answered for a minute, and the next start on the same machine had one at once.
GATEWAY_WAIT_SECONDS: Final = 10.0
SIOCGIFADDR: Final = 0x8915


def bridge_gateway(engine: Engine, wait_seconds: float = GATEWAY_WAIT_SECONDS) -> str:
    """The default bridge's gateway: the host's address as containers on that bridge see it (Linux).
    Read from the network's IPAM config, else from the bridge interface itself (the same address),
    polled for `wait_seconds` before an EngineError that shows what the engine reported."""
    deadline = time.monotonic() + wait_seconds
    while True:
        inspected = docker(engine, "network", "inspect", "bridge").stdout
        address, reported = gateway_of(inspected)
        if address:
            return address
        if time.monotonic() >= deadline:
            raise EngineError(f"{engine.where} reports no gateway for its bridge network ({reported})")
        time.sleep(0.5)


def gateway_of(inspected: str, interface_address: Callable[[str], str | None] | None = None) -> tuple[str, str]:
    """(the gateway, or "" if none yet; what was reported) from `docker network inspect bridge`'s JSON."""
    try:
        networks = json.loads(inspected)
        network = networks[0]
        configs = (network.get("IPAM") or {}).get("Config") or []
        options = network.get("Options") or {}
    except (ValueError, IndexError, KeyError, AttributeError, TypeError):
        return "", f"not a network inspection: {inspected[:200]!r}"
    for config in configs:
        gateway = str(config.get("Gateway") or "").strip()
        if gateway:
            return gateway, ""
    name = str(options.get("com.docker.network.bridge.name") or "docker0")
    found = (interface_address or ipv4_of)(name)
    if found:
        return found, ""
    return "", f"IPAM config {json.dumps(configs)}, and interface {name} has no IPv4 address"


def ipv4_of(interface: str) -> str | None:
    """The IPv4 address of a network interface on this host (Linux's SIOCGIFADDR); None without one."""
    try:
        import fcntl  # Linux and macOS only: the lookup is skipped where it does not exist.
    except ImportError:
        return None
    request = struct.pack("256s", interface.encode()[:15])
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            answer = fcntl.ioctl(probe.fileno(), SIOCGIFADDR, request)
        except OSError:
            return None
    return socket.inet_ntoa(answer[20:24])


def require_engine() -> Engine:
    engine = find_engine()
    if engine is None:
        raise EngineError("no container engine answers: start one with `make engine` (or set DOCKER_HOST)")
    return engine


def _cgroups_missing() -> str | None:
    try:
        mounts = Path("/proc/self/mounts").read_text(encoding="utf-8").splitlines()
    except OSError:
        return "/proc/self/mounts cannot be read"
    if not any(line.split()[2:3] in (["cgroup"], ["cgroup2"]) for line in mounts if len(line.split()) > 2):
        return "no cgroup filesystem is mounted (/sys/fs/cgroup): dockerd cannot run containers on this machine"
    return None


def _last_error(log: Path) -> str:
    try:
        lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return "no log"
    for line in reversed(lines):
        if "level=fatal" in line or "level=error" in line or line.startswith("failed"):
            return line.strip()[:300]
    return lines[-1].strip()[:300] if lines else "an empty log"


def start_engine() -> tuple[Engine, bool]:
    """The engine to use, and whether this call started it (the project's dockerd)."""
    found = find_engine()
    if found is not None:
        return found, False
    if os.geteuid() != 0:
        raise EngineError(
            f"the project's dockerd runs as root and this is uid {os.geteuid()}: run `sudo make engine`, "
            "or start your own Docker (DOCKER_HOST or /var/run/docker.sock)"
        )
    dockerd = shutil.which("dockerd")
    if dockerd is None:
        raise EngineError("no dockerd on PATH: `make engine` installs Debian's docker.io and starts it")
    missing = _cgroups_missing()
    if missing:
        raise EngineError(missing)
    short = _short_dir()
    short.mkdir(mode=0o700, parents=True, exist_ok=True)
    data_root = _data_root()
    data_root.mkdir(parents=True, exist_ok=True)
    ENGINE_DIR.mkdir(parents=True, exist_ok=True)
    host = f"unix://{short / 'docker.sock'}"
    command = [
        dockerd,
        "--host",
        host,
        "--data-root",
        str(data_root),
        "--exec-root",
        str(short / "exec"),
        "--pidfile",
        str(short / "dockerd.pid"),
        "--storage-driver=vfs",
        "--iptables=false",
        "--ip6tables=false",
    ]
    env = {**os.environ, "HTTP_PROXY": NO_REGISTRY_PROXY, "HTTPS_PROXY": NO_REGISTRY_PROXY, "NO_PROXY": ""}
    env.pop("DOCKER_HOST", None)
    with LOG_FILE.open("ab") as log:
        process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env, start_new_session=True
        )
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while not _answers(host):
        code = process.poll()
        if code is not None:
            raise EngineError(f"dockerd exited with {code}: {_last_error(LOG_FILE)} (all of it: {LOG_FILE})")
        if time.monotonic() > deadline:
            _stop(process.pid)
            raise EngineError(f"dockerd did not answer on {host} within {START_TIMEOUT_SECONDS:.0f} s: see {LOG_FILE}")
        time.sleep(0.2)
    STATE_FILE.write_text(
        json.dumps({"pid": process.pid, "host": host, "data_root": str(data_root), "log": str(LOG_FILE)}),
        encoding="utf-8",
    )
    return Engine(host, ours=True, where=f"the project's dockerd (pid {process.pid}, {host})"), True


def _children(pid: int) -> list[int]:
    with contextlib.suppress(OSError):
        tasks = Path(f"/proc/{pid}/task").iterdir()
        return [int(child) for task in tasks for child in (task / "children").read_text().split()]
    return []


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8")
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def _stop(pid: int) -> None:
    """SIGTERM dockerd (it stops its containers and its containerd), then wait for all of them."""
    family = [pid, *_children(pid)]
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT_SECONDS
    while any(_alive(p) for p in family) and time.monotonic() < deadline:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
        time.sleep(0.2)
    for straggler in (p for p in family if _alive(p)):
        with contextlib.suppress(ProcessLookupError):
            os.kill(straggler, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)


def stop_engine() -> str:
    """Stop the project's dockerd, if it runs; a user's own Docker is never touched."""
    ours = our_engine()
    if ours is None:
        state = _read_state()
        STATE_FILE.unlink(missing_ok=True)
        return "the project's dockerd was not running" + (" (a stale state file was removed)" if state else "")
    pid, engine = ours
    _stop(pid)
    STATE_FILE.unlink(missing_ok=True)
    return f"stopped {engine.where}"


def pull_attempts(since_offset: int = 0) -> list[str]:
    """The project's dockerd's log lines, from a byte offset, that show an image being fetched."""
    try:
        with LOG_FILE.open("rb") as log:
            log.seek(since_offset)
            text = log.read().decode("utf-8", errors="replace")
    except OSError:
        return []
    return [line for line in text.splitlines() if any(marker in line for marker in PULL_MARKERS)]


def log_offset() -> int:
    try:
        return LOG_FILE.stat().st_size
    except OSError:
        return 0
