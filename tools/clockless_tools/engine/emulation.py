"""Running the other Lambda architecture here: Debian's qemu-user-static registered with the kernel's
binfmt_misc, so an arm64 program (debootstrap's second stage, the Runtime Interface Emulator, the
function's python3.13) runs on an x86_64 machine, in containers too.

The registration is the one Debian's package ships (/usr/lib/binfmt.d/qemu-<cpu>.conf) with its
F flag: the kernel opens the interpreter once, at registration, so a container's root file system
need not hold it. It lasts until the machine restarts (`clockless engine emulation --off` removes
it sooner); it needs root and a kernel that lets this machine mount binfmt_misc.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Final

from clockless_tools.engine.dockerd import EngineError

BINFMT: Final = Path("/proc/sys/fs/binfmt_misc")
CONFIGS: Final = Path("/usr/lib/binfmt.d")
# The qemu name of each Lambda architecture's CPU.
CPUS: Final = {"arm64": "aarch64", "x86_64": "x86_64"}


def _entry(architecture: str) -> Path:
    return BINFMT / f"qemu-{CPUS[architecture]}"


def emulated(architecture: str) -> bool:
    """Whether the kernel runs `architecture`'s programs through qemu now."""
    entry = _entry(architecture)
    return entry.is_file() and entry.read_text(encoding="utf-8").startswith("enabled")


def register(architecture: str) -> str:
    """Register qemu for `architecture` (idempotent); one line saying what was done."""
    if emulated(architecture):
        return f"{architecture} already runs under qemu here ({_entry(architecture)})"
    if os.geteuid() != 0:
        raise EngineError(f"registering qemu with binfmt_misc needs root and this is uid {os.geteuid()}")
    config = CONFIGS / f"qemu-{CPUS[architecture]}.conf"
    if not config.is_file():
        raise EngineError(f"{config} is missing: `make emulation` installs Debian's qemu-user-static")
    if not (BINFMT / "register").exists():
        mounted = subprocess.run(
            ["mount", "-t", "binfmt_misc", "binfmt_misc", str(BINFMT)], capture_output=True, text=True, check=False
        )
        if mounted.returncode != 0:
            reason = (mounted.stderr.strip() or "no reason given").splitlines()[-1]
            raise EngineError(f"cannot mount binfmt_misc on {BINFMT}: {reason}")
    rule = config.read_text(encoding="utf-8").strip()
    try:
        (BINFMT / "register").write_text(rule, encoding="utf-8")
    except OSError as error:
        raise EngineError(f"the kernel refused the binfmt_misc rule of {config}: {error.strerror}") from None
    return f"{architecture} now runs under qemu ({config.name} registered with binfmt_misc)"


def unregister(architecture: str) -> str:
    if not _entry(architecture).is_file():
        return f"{architecture} was not registered with binfmt_misc"
    _entry(architecture).write_text("-1", encoding="utf-8")
    return f"{architecture} no longer runs under qemu here"
