#!/usr/bin/env bash
# Builds what Baton ships, in one layout: OUT/bin/baton and OUT/lib/libbaton_interposer.so (and
# OUT/bin/baton-webhook with --webhook), release builds with their symbols stripped. The wheel
# (python/build_backend.py) and the container image (deploy/helm/Dockerfile) both come from
# here, so they carry the same files.
#
#   scripts/build-dist.sh OUT [--webhook]
#
# `baton` finds the interposer at ../lib from its own directory, so OUT can be moved as a whole.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ $# -lt 1 ] || [ "${1#-}" != "$1" ]; then
    echo "usage: scripts/build-dist.sh OUT [--webhook]" >&2
    exit 2
fi
out=$1
shift
packages=(-p baton-cli -p baton-interposer)
webhook=0
for arg in "$@"; do
    case "$arg" in
        --webhook) webhook=1 packages+=(-p baton-webhook) ;;
        *) echo "scripts/build-dist.sh: unknown option $arg" >&2; exit 2 ;;
    esac
done

if ! command -v cargo >/dev/null 2>&1; then
    echo "scripts/build-dist.sh: no Rust toolchain (cargo) on this machine; install one with rustup (https://rustup.rs), version 1.85 or newer" >&2
    exit 1
fi
echo "build-dist: cargo build --release ${packages[*]}" >&2
cargo build --release --locked "${packages[@]}" >&2
target=${CARGO_TARGET_DIR:-target}/release

mkdir -p "$out/bin" "$out/lib"
files=("$out/bin/baton" "$out/lib/libbaton_interposer.so")
install -m 0755 "$target/baton" "$out/bin/baton"
install -m 0755 "$target/libbaton_interposer.so" "$out/lib/libbaton_interposer.so"
if [ "$webhook" -eq 1 ]; then
    install -m 0755 "$target/baton-webhook" "$out/bin/baton-webhook"
    files+=("$out/bin/baton-webhook")
fi
# The release profile keeps line tables for profiling; what ships does not need them. The
# interposer keeps its dynamic symbols (the hooks and the C ABI): --strip-unneeded leaves them.
if command -v strip >/dev/null 2>&1; then
    strip --strip-unneeded "${files[@]}"
else
    echo "build-dist: WARNING: no strip (binutils) on this machine; shipping unstripped files" >&2
fi
ls -l "${files[@]}" >&2
