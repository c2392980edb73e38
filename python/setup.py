"""Tags the wheel for what it carries: Baton's binaries (`src/baton/_dist/`), which run on any
Python 3 and need the platform's glibc. The metadata is in pyproject.toml."""

from __future__ import annotations

import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.bdist_wheel import bdist_wheel

DIST = Path(__file__).resolve().parent / "src" / "baton" / "_dist"
BINARIES = [DIST / "bin" / "baton", DIST / "lib" / "libbaton_interposer.so"]


def glibc_needed() -> tuple[int, int] | None:
    """The newest glibc symbol version the binaries need (from their dynamic symbol tables)."""
    objdump = shutil.which("objdump")
    if objdump is None:
        return None
    newest = (2, 0)
    for f in BINARIES:
        out = subprocess.run([objdump, "-T", str(f)], check=True, capture_output=True, text=True).stdout
        for major, minor in re.findall(r"GLIBC_(\d+)\.(\d+)", out):
            newest = max(newest, (int(major), int(minor)))
    return newest


def platform_tag() -> str:
    machine = platform.machine()
    glibc = glibc_needed()
    if glibc is None:
        print(
            "baton-gpu: WARNING: no objdump (binutils) to read the glibc the binaries need; "
            f"tagging the wheel linux_{machine}, installable on this kind of machine only",
            file=sys.stderr,
        )
        return f"linux_{machine}"
    return f"manylinux_{glibc[0]}_{glibc[1]}_{machine}"


class WithBinaries(Distribution):
    """Installed where platform-specific files go (site-packages' platlib), as the binaries are."""

    def has_ext_modules(self):
        return True


class PlatformWheel(bdist_wheel):
    """A wheel for any Python 3 on this platform: the package is pure Python beside binaries."""

    def get_tag(self):
        missing = [str(f) for f in BINARIES if not f.is_file()]
        if missing:
            sys.exit(f"baton-gpu: {', '.join(missing)} missing: build the wheel with pip (python/build_backend.py)")
        return "py3", "none", platform_tag()


setup(distclass=WithBinaries, cmdclass={"bdist_wheel": PlatformWheel})
