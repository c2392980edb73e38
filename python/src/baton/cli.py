"""The `baton` executable this package carries, and thin ways to run it from Python.

The wheel holds `baton` and the interposer side by side (`_dist/bin`, `_dist/lib`); the
`baton` console script and `python -m baton` hand their arguments to that executable, and
`baton.run` starts a program under it. `$BATON_EXECUTABLE` points elsewhere (a build of your
own).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Optional, Sequence, Union

__all__ = ["executable", "interposer", "main", "run"]

_DIST = Path(__file__).resolve().parent / "_dist"
_BUNDLED = _DIST / "bin" / "baton"

StrPath = Union[str, "os.PathLike[str]"]


def executable() -> str:
    """The path of the `baton` executable: `$BATON_EXECUTABLE`, else the one in this package."""
    override = os.environ.get("BATON_EXECUTABLE")
    if override:
        if not os.access(override, os.X_OK):
            raise FileNotFoundError(f"$BATON_EXECUTABLE={override} is not an executable file")
        return override
    if os.access(_BUNDLED, os.X_OK):
        return str(_BUNDLED)
    raise FileNotFoundError(
        f"this baton package carries no executable ({_BUNDLED} is missing): install the wheel "
        "(`pip wheel ./python` builds it), or point $BATON_EXECUTABLE at a baton you built"
    )


def interposer() -> str:
    """The path of the interposer this package carries, for `LD_PRELOAD` or a Slurm plugin's
    `interposer=` (`baton run` finds it by itself)."""
    lib = _DIST / "lib" / "libbaton_interposer.so"
    if not lib.is_file():
        raise FileNotFoundError(f"this baton package carries no interposer ({lib} is missing): install the wheel")
    return str(lib)


def main(argv: Optional[Sequence[str]] = None) -> None:
    """`baton ARGS...`: replaces this process with the executable (signals and exit status are
    the executable's own)."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        exe = executable()
    except FileNotFoundError as e:
        sys.exit(f"baton: {e}")
    os.execv(exe, ["baton", *args])


def run(
    command: Sequence[StrPath],
    *,
    priority: Optional[int] = None,
    options: Sequence[str] = (),
    check: bool = False,
    **kwargs: Any,
) -> subprocess.CompletedProcess:
    """Runs `command` under Baton and waits for it: `baton run [--priority P] OPTIONS -- COMMAND`.

    `options` are more `baton run` flags (`["--local"]`, `["--level", "3"]`); `check` raises
    `subprocess.CalledProcessError` on a non-zero exit; other keyword arguments go to
    `subprocess.run` (`env`, `cwd`, `capture_output`, ...). Returns the completed process.
    """
    if not command:
        raise ValueError("baton.run needs a command to run")
    args = [executable(), "run"]
    if priority is not None:
        args += ["--priority", str(int(priority))]
    args += [*options, "--", *map(os.fspath, command)]
    return subprocess.run(args, check=check, **kwargs)
