"""The stand-in python3.13 Lambda runtime image, built here because AWS's cannot be pulled.

What it is made of: Debian trixie's python3.13 (`debootstrap --variant=minbase`), the packages of
tools/runtime-image-requirements.txt (awslambdaric and boto3, every file's hash checked, wheels
for the image's architecture) in the runtime directory, the Runtime Interface Emulator SAM CLI
ships, and a bootstrap that starts the runtime interface client as AWS's python3.13 runtime does:
the same paths (/var/task, /var/runtime, the layers under /opt) and variables
(LAMBDA_TASK_ROOT, LAMBDA_RUNTIME_DIR). `sam local` builds its own image on top of it
(`--invoke-image`), adding the layers.

It is tagged with the hash of that recipe, so a second build is a lookup, and the root file
system's tarball is kept in the user's cache, so a fresh engine imports it instead of building
it again. Nothing is pulled: `docker import` makes the image from the tarball.
"""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from clockless_tools.engine.dockerd import Engine, EngineError, docker
from clockless_tools.engine.emulation import emulated
from clockless_tools.template.loader import PROJECT_ROOT

REPOSITORY: Final = "clockless/lambda-python3.13"
REQUIREMENTS: Final = PROJECT_ROOT / "tools" / "runtime-image-requirements.txt"
SUITE: Final = "trixie"
MIRROR_ENV: Final = "CLOCKLESS_DEBIAN_MIRROR"
DEFAULT_MIRROR: Final = "http://deb.debian.org/debian"
# python3.13 and what boto3 needs to speak TLS to AWS's endpoints.
PACKAGES: Final = ("python3.13", "ca-certificates")
# What a minimal base system carries that a runtime never reads: dropped to keep the image small.
DROPPED: Final = (
    "var/cache/apt/archives",
    "var/lib/apt/lists",
    "usr/share/doc",
    "usr/share/man",
    "usr/share/info",
    "usr/share/locale",
    "var/log",
)
ARCHITECTURES: Final = {"x86_64": ("amd64", "x86_64-manylinux_2_28"), "arm64": ("arm64", "aarch64-manylinux_2_28")}
RIE_DIR: Final = PROJECT_ROOT / ".venv-sam" / "lib" / "python3.13" / "site-packages" / "samcli" / "local" / "rapid"
UV: Final = PROJECT_ROOT / ".uv" / "bin" / "uv"

# The python3.13 runtime's environment (AWS's image sets these; the paths are the runtime's).
ENVIRONMENT: Final = {
    "LANG": "en_US.UTF-8",
    "TZ": ":/etc/localtime",
    "PATH": "/var/lang/bin:/usr/local/bin:/usr/bin/:/bin:/opt/bin",
    "LD_LIBRARY_PATH": "/var/lang/lib:/lib64:/usr/lib64:/var/runtime:/var/runtime/lib:/var/task:/var/task/lib:/opt/lib",
    "LAMBDA_TASK_ROOT": "/var/task",
    "LAMBDA_RUNTIME_DIR": "/var/runtime",
}
# The Runtime Interface Emulator starts /var/runtime/bootstrap with _HANDLER set. The import path
# is the runtime's: the function's code (`python -m` puts the working directory, /var/task, first),
# then its layers, then the runtime's own packages (a layer's boto3 wins over the runtime's, as on
# Lambda).
BOOTSTRAP: Final = """#!/bin/sh
# The stand-in python3.13 runtime's bootstrap (clockless_tools/engine/runtime_image.py).
export PYTHONPATH="/opt/python/lib/python3.13/site-packages:/opt/python:/var/runtime"
cd "${LAMBDA_TASK_ROOT:-/var/task}" || exit 1
exec /usr/bin/python3.13 -m awslambdaric "$_HANDLER"
"""


@dataclass(frozen=True)
class RuntimeImage:
    architecture: str
    digest: str

    @property
    def tag(self) -> str:
        return f"{REPOSITORY}:{self.digest[:12]}-{self.architecture}"

    @property
    def tarball(self) -> Path:
        return cache_dir() / f"rootfs-{self.digest[:12]}-{self.architecture}.tar"


def host_architecture() -> str:
    """The Lambda architecture this machine runs natively."""
    return "arm64" if platform.machine().lower() in ("aarch64", "arm64") else "x86_64"


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "clockless" / "runtime-image"


def _rie(architecture: str) -> Path:
    rie = RIE_DIR / f"aws-lambda-rie-{architecture}"
    if not rie.is_file():
        raise EngineError(f"SAM CLI's Runtime Interface Emulator is missing ({rie}): run `make sam`")
    return rie


def runtime_image(architecture: str) -> RuntimeImage:
    """The image for `architecture`, named by the hash of everything it is built from."""
    if architecture not in ARCHITECTURES:
        raise EngineError(f"unknown architecture {architecture!r}: one of {', '.join(ARCHITECTURES)}")
    recipe = hashlib.sha256()
    for part in (SUITE, *PACKAGES, *DROPPED, BOOTSTRAP, repr(sorted(ENVIRONMENT.items())), architecture):
        recipe.update(part.encode() + b"\0")
    recipe.update(REQUIREMENTS.read_bytes())
    recipe.update(hashlib.sha256(_rie(architecture).read_bytes()).digest())
    return RuntimeImage(architecture, recipe.hexdigest())


def image_present(engine: Engine, tag: str) -> bool:
    return docker(engine, "image", "inspect", "--format", "{{.Id}}", tag, check=False).returncode == 0


def missing_image_error(tag: str, architecture: str) -> EngineError:
    return EngineError(
        f"the runtime image {tag} is not on the engine: build it with `make runtime-image"
        f"{'' if architecture == host_architecture() else f' ARCH={architecture}'}` (nothing is ever pulled)"
    )


def _run(command: list[str], what: str) -> None:
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        tail = (result.stderr or result.stdout).strip().splitlines()[-1:] or ["no output"]
        raise EngineError(f"{what} failed ({result.returncode}): {tail[0]}")


def _build_rootfs(image: RuntimeImage, root: Path) -> None:
    debian_arch, wheel_platform = ARCHITECTURES[image.architecture]
    if image.architecture != host_architecture() and not emulated(image.architecture):
        raise EngineError(
            f"the {image.architecture} image is built on an {image.architecture} machine, or under qemu "
            f"(`make emulation`; this one is {host_architecture()}): functions run natively with "
            f"Architecture={host_architecture()}"
        )
    if os.geteuid() != 0:
        raise EngineError(f"debootstrap runs as root and this is uid {os.geteuid()}: run `sudo make runtime-image`")
    if shutil.which("debootstrap") is None:
        raise EngineError("no debootstrap on PATH: `make engine` installs it with docker.io")
    mirror = os.environ.get(MIRROR_ENV, DEFAULT_MIRROR)
    _run(
        [
            "debootstrap",
            "--variant=minbase",
            f"--include={','.join(PACKAGES)}",
            f"--arch={debian_arch}",
            SUITE,
            str(root),
            mirror,
        ],
        f"debootstrap {SUITE} from {mirror}",
    )
    for dropped in DROPPED:
        shutil.rmtree(root / dropped, ignore_errors=True)
        (root / dropped).mkdir(parents=True, exist_ok=True)
    runtime = root / "var" / "runtime"
    if not UV.is_file():
        raise EngineError(f"uv is missing ({UV}): run `make setup`")
    _run(
        [
            str(UV),
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--require-hashes",
            "--only-binary",
            ":all:",
            "--python-version",
            "3.13",
            "--python-platform",
            wheel_platform,
            "--compile-bytecode",
            "--target",
            str(runtime),
            "-r",
            str(REQUIREMENTS),
        ],
        f"installing {REQUIREMENTS.name}",
    )
    bootstrap = runtime / "bootstrap"
    bootstrap.write_text(BOOTSTRAP, encoding="utf-8")
    bootstrap.chmod(0o755)
    (root / "var" / "task").mkdir(parents=True, exist_ok=True)
    (root / "opt").mkdir(exist_ok=True)
    rapid = root / "var" / "rapid"
    rapid.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(_rie(image.architecture), rapid / "aws-lambda-rie")
    (rapid / "aws-lambda-rie").chmod(0o755)


def _write_tarball(root: Path, tarball: Path) -> None:
    """The root file system, in name order with one time and numeric owners: the same tree, the same bytes."""
    tarball.parent.mkdir(parents=True, exist_ok=True)
    partial = tarball.with_suffix(".partial")
    _run(
        [
            "tar",
            "--sort=name",
            "--mtime=@0",
            "--numeric-owner",
            "--xattrs",
            "-C",
            str(root),
            "-cf",
            str(partial),
            ".",
        ],
        "packing the root file system",
    )
    partial.replace(tarball)


def _import(engine: Engine, image: RuntimeImage) -> None:
    changes = [f"ENV {name}={value}" for name, value in ENVIRONMENT.items()]
    changes += [
        "WORKDIR /var/task",
        'ENTRYPOINT ["/var/rapid/aws-lambda-rie"]',
        f"LABEL org.clockless.recipe={image.digest}",
    ]
    # The image's platform is its files' architecture: `sam local` asks for the function's.
    platform_name = f"linux/{ARCHITECTURES[image.architecture][0]}"
    arguments = ["import", "--platform", platform_name, "--message", "clockless stand-in python3.13 Lambda runtime"]
    for change in changes:
        arguments += ["--change", change]
    docker(engine, *arguments, str(image.tarball), image.tag)


def build_runtime_image(engine: Engine, architecture: str, *, rebuild: bool = False) -> tuple[RuntimeImage, str]:
    """The image on the engine, and how it got there: already there, imported from the cache, or built."""
    image = runtime_image(architecture)
    if image_present(engine, image.tag) and not rebuild:
        return image, "already on the engine"
    how = f"imported from {image.tarball}"
    if rebuild or not image.tarball.is_file():
        with tempfile.TemporaryDirectory(prefix="clockless-rootfs-") as scratch:
            root = Path(scratch) / "root"
            _build_rootfs(image, root)
            _write_tarball(root, image.tarball)
        how = f"built from Debian {SUITE} and {REQUIREMENTS.name} (root file system cached in {image.tarball})"
    _import(engine, image)
    return image, how
