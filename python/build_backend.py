"""The build backend of baton-gpu: Baton's binaries, then a wheel that carries them.

`pip wheel ./python` (or `pip install ./python`) runs `scripts/build-dist.sh`, the same recipe
the container image uses, into `src/baton/_dist/` (`bin/baton`, `lib/libbaton_interposer.so`),
then lets setuptools make the wheel (`setup.py` tags it for the platform). Everything else is
setuptools' own. The wheel is built from the repository, which holds the Rust workspace: there
is no source distribution.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from setuptools import build_meta as _setuptools
from setuptools.build_meta import (  # noqa: F401  (hooks passed through unchanged)
    get_requires_for_build_editable,
    get_requires_for_build_wheel,
    prepare_metadata_for_build_editable,
    prepare_metadata_for_build_wheel,
)

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DIST = HERE / "src" / "baton" / "_dist"


def _terminal():
    """The user's terminal when pip hides this backend's output (it keeps it unless the build
    fails or `-v` is given): a cold build compiles for minutes, and saying nothing meanwhile
    looks like a hang. None where there is no terminal (CI), where the output stays pip's."""
    if sys.stderr.isatty():
        return None
    try:
        return open("/dev/tty", "w")  # noqa: SIM115  (closed by _build_binaries)
    except OSError:
        return None


def _build_binaries() -> None:
    script = REPO / "scripts" / "build-dist.sh"
    if not script.is_file():
        sys.exit(f"baton-gpu: {script} is missing; the wheel is built from a clone of the repository")
    tty = _terminal()
    note = (
        "baton-gpu: building Baton's binaries with cargo (release); the first build takes a few "
        "minutes, later ones seconds\n"
    )
    (tty or sys.stderr).write(note)
    (tty or sys.stderr).flush()
    try:
        # cargo's progress goes to its standard error: to the terminal, where there is one.
        subprocess.run(["bash", str(script), str(DIST)], check=True, stderr=tty)
    finally:
        if tty:
            tty.close()


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    _build_binaries()
    return _setuptools.build_wheel(wheel_directory, config_settings, metadata_directory)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    _build_binaries()
    return _setuptools.build_editable(wheel_directory, config_settings, metadata_directory)


def build_sdist(sdist_directory, config_settings=None):
    raise RuntimeError(
        "baton-gpu has no source distribution: its wheel compiles the Rust workspace around it. "
        "Build the wheel from a clone: `pip wheel ./python -w dist` (or `python -m build --wheel python`)"
    )
