#!/usr/bin/env bash
# The wheel as a user meets it: built from ./python (which compiles the workspace), checked with
# auditwheel, installed into a fresh virtual environment whose PATH holds no cargo, then used:
# `baton demo`, `baton run` of a Python program that asks Baton for its status, `python -m
# baton`, `baton.run`, and the Python package's tests against the installed package, its
# interposer and its executable. Run by scripts/test.sh; the tools venv provides auditwheel.
#
#   scripts/test-wheel.sh TOOLS_VENV
set -euo pipefail
cd "$(dirname "$0")/.."
tools=${1:?usage: scripts/test-wheel.sh TOOLS_VENV}

wheels=target/wheel
rm -rf "$wheels"
python3 -m pip wheel --quiet --no-deps ./python -w "$wheels"
wheel=$(ls "$wheels"/baton_gpu-*.whl)
tag=$(basename "$wheel" .whl | cut -d- -f5)
size=$(du -k "$wheel" | cut -f1)
echo "wheel: $(basename "$wheel") ($((size / 1024)).$(((size % 1024) * 10 / 1024)) MiB)"
show=$("$tools/bin/auditwheel" show "$wheel")
if ! grep -q "consistent with the following platform tag: \"$tag\"" <<<"$(tr '\n' ' ' <<<"$show" | tr -s ' ')"; then
    echo "auditwheel does not confirm the wheel's tag $tag:" >&2
    echo "$show" >&2
    exit 1
fi
echo "auditwheel: consistent with $tag"
for page in README.md docs/USAGE.md docs/CLUSTER.md; do
    if ! grep -qF "$(basename "$wheel")" "$page"; then
        echo "$page does not name the wheel the build makes, $(basename "$wheel")" >&2
        exit 1
    fi
done

# The fake driver stands in for libcuda.so.1 (no GPU here); cargo test built it.
cargo build --quiet --locked -p baton-fake-cuda
fake=$PWD/target/debug/libfake_cuda.so

venv=$PWD/target/wheel-venv
rm -rf "$venv"
python3 -m venv "$venv"
# Everything the user runs below sees only the venv: no cargo, no rustc, no repository paths.
bare() { env -i HOME="$HOME" PATH="$venv/bin" "$@"; }
if bare /bin/sh -c 'command -v cargo || command -v rustc'; then
    echo "the bare environment still finds a Rust toolchain" >&2
    exit 1
fi
bare "$venv/bin/pip" install --quiet --no-index --no-deps "$wheel"
site=$(bare python -c 'import baton, os; print(os.path.dirname(baton.__file__))')
case "$site" in
    "$venv"/*) ;;
    *) echo "baton was imported from $site, not from the venv" >&2; exit 1 ;;
esac

expect() { # expect WHAT PATTERN OUTPUT
    if ! grep -q -- "$2" <<<"$3"; then
        echo "wheel: $1: expected '$2' in:" >&2
        echo "$3" >&2
        exit 1
    fi
    echo "wheel: $1: ok"
}
expect "baton --version" "^baton 0.1.0" "$(bare baton --version)"
expect "python -m baton --version" "^baton 0.1.0" "$(bare python -m baton --version)"
expect "baton demo" "HP p99 under Baton" "$(bare baton demo --duration-s 1)"
expect "baton run (status from Python)" "scheduler='local'" \
    "$(bare baton run --local --cuda-lib "$fake" -- python -c 'import baton; print(baton.status())')"
expect "baton.run" "run ok" "$(bare python - "$fake" <<'EOF'
import subprocess
import sys

import baton

fake = sys.argv[1]
assert baton.executable().startswith(sys.prefix), baton.executable()
assert baton.interposer().startswith(sys.prefix), baton.interposer()
child = "import baton; s = baton.status(); print(s.scheduler, s.process_priority)"
r = baton.run([sys.executable, "-c", child], priority=7, options=["--local", "--cuda-lib", fake],
              capture_output=True, text=True, check=True)
assert r.stdout.split() == ["local", "7"], r
try:
    baton.run([sys.executable, "-c", "raise SystemExit(3)"], options=["--local", "--cuda-lib", fake], check=True)
    raise AssertionError("a failing program did not raise")
except subprocess.CalledProcessError as e:
    assert e.returncode == 3, e
print("run ok")
EOF
)"
# The venv has no PyTorch: its helpers say what is missing and how to get it.
expect "import baton.torch without PyTorch" "baton.torch needs PyTorch" \
    "$(bare python -c 'import baton.torch' 2>&1 || true)"
# Without a driver the interposer says so, and the Python package raises instead of hanging.
expect "baton run without a driver" "could not open the CUDA driver" \
    "$(bare baton run --local -- python -c 'import baton; baton.status()' 2>&1 || true)"

echo "wheel: the Python package's tests against the installed package, interposer and executable"
BATON_PYTHON="$venv/bin/python" \
    BATON_INTERPOSER_LIB="$site/_dist/lib/libbaton_interposer.so" \
    BATON_BIN="$site/_dist/bin/baton" \
    cargo test --quiet -p baton-cuda-testapps --locked --test capi python
