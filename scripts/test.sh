#!/usr/bin/env bash
# Runs every test Baton has, as CI does: formatting, lints, the API docs' links, the unit,
# integration and property tests of the whole workspace, and the loom model check of the
# XQueue's concurrency.
#
# A part that cannot run here is skipped visibly: its name and why go to $BATON_SKIP_LOG and
# the last line lists them. With BATON_CI_STRICT=1 (set by .ci/run) a skip is a failure.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p target
# Every scratch folder the tests make (the agents', the Slurm fixtures', the GPU scripts'
# self-tests', anything through std::env::temp_dir, Python's tempfile or mktemp) goes under one
# folder of this run, removed at the end: the run leaves /tmp as it found it, and says so.
tmp_before=$(ls -A /tmp 2>/dev/null | sort)
scratch=$(mktemp -d "${TMPDIR:-/tmp}/baton-test.XXXXXX")
# Writable by all, sticky, as /tmp is: the Slurm test's jobs run as another user and inherit it.
chmod 1777 "$scratch"
trap 'rm -rf "$scratch"' EXIT
export TMPDIR=$scratch
BATON_SKIP_LOG=$PWD/target/skipped.txt
: >"$BATON_SKIP_LOG"
export BATON_SKIP_LOG
# The Python linter and formatter, and the wheel checker, fetched from PyPI into target/tools-venv.
RUFF_VERSION=0.17.6
AUDITWHEEL_VERSION=6.8.2

echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings
echo "== cargo doc (every intra-doc link resolves)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked
echo "== cargo test"
cargo test --workspace --locked
echo "== loom model check (XQueue interleavings)"
LOOM_MAX_PREEMPTIONS=3 RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
    cargo test -p baton-core --release --lib --locked loom
echo "== ruff: lint and format of every Python file under scripts/, python/ and crates/ (ruff.toml)"
tools=target/tools-venv
if ! "$tools/bin/ruff" --version 2>/dev/null | grep -qx "ruff $RUFF_VERSION" \
    || ! "$tools/bin/auditwheel" --version 2>/dev/null | grep -q "auditwheel $AUDITWHEEL_VERSION "; then
    rm -rf "$tools"
    python3 -m venv "$tools"
    "$tools/bin/pip" install --quiet "ruff==$RUFF_VERSION" "auditwheel==$AUDITWHEEL_VERSION"
fi
"$tools/bin/ruff" check scripts python crates
"$tools/bin/ruff" format --check scripts python crates
echo "== GPU-script analysis self-tests"
python3 scripts/gpu/levels/preemption_timeline.py --self-test
python3 scripts/gpu/matrix/analyze.py --self-test
python3 scripts/gpu/matrix/hold_lag.py --self-test
python3 scripts/gpu/matrix/heat.py --self-test
python3 scripts/gpu/matrix/selftest.py
python3 scripts/gpu/multigpu/multigpu.py --self-test
python3 scripts/gpu/capi/summarize.py --self-test
python3 scripts/gpu/yielders/report.py --self-test
python3 scripts/gpu/transparency/summarize.py --self-test
echo "== the wheel: built from ./python, checked, installed where no cargo is, used; the Python package's tests"
bash scripts/test-wheel.sh "$tools"
echo "== cluster deployment (Helm chart rendered and validated without a cluster)"
bash scripts/test-cluster.sh
# A single-node Slurm cluster needs root and Debian's slurm-wlm, munge and libslurm-dev
# (.ci/run installs them where apt is).
if [ "$(id -u)" -eq 0 ] && command -v slurmctld >/dev/null 2>&1 && command -v munged >/dev/null 2>&1 \
    && [ -f /usr/include/slurm/spank.h ]; then
    echo "== Slurm end to end (single-node cluster, SPANK plugin, fake driver)"
    bash scripts/test-slurm-e2e.sh
else
    echo "Slurm end to end (needs root and slurm-wlm, munge, libslurm-dev)" >>"$BATON_SKIP_LOG"
fi
rm -rf "$scratch"
left=$(comm -13 <(echo "$tmp_before") <(ls -A /tmp 2>/dev/null | sort) | grep -v '^baton-test\.' || true)
if [ -n "$left" ]; then
    # Under CI nothing else runs; on a workstation another program may have made them.
    if [ "${BATON_CI_STRICT:-0}" = 1 ]; then
        echo "== FAILED: the tests left these in /tmp: $(echo "$left" | paste -sd ' ')"
        exit 1
    fi
    echo "== warning: new in /tmp since the tests began (left by them, or by another program): $(echo "$left" | paste -sd ' ')"
fi
if [ ! -s "$BATON_SKIP_LOG" ]; then
    echo "== all tests passed, nothing skipped"
    exit 0
fi
skipped=$(paste -sd ';' "$BATON_SKIP_LOG" | sed 's/;/; /g')
if [ "${BATON_CI_STRICT:-0}" = 1 ]; then
    echo "== FAILED: BATON_CI_STRICT=1 allows no skip, and these were skipped: $skipped"
    exit 1
fi
echo "== all tests passed, skipped: $skipped"
