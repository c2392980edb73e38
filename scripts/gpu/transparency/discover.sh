#!/usr/bin/env bash
# Facts about the GPU machine's driver that Baton's correctness depends on, in one run:
#   - the CUDA header's stream-ordered functions and the driver's exported symbols;
#   - which symbol cuGetProcAddress hands out for a base name at each version and flag;
#   - which calls a stream capture tolerates from which thread (capture_probe.cu);
#   - with CENSUS=1, the driver functions each transparency workload calls (CUPTI).
#
#   OUT=dir scripts/gpu/transparency/discover.sh
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
OUT=${OUT:-$ROOT/out}
mkdir -p "$OUT"
W=$(mktemp -d)
CUDA_HOME=${CUDA_HOME:-$(dirname "$(dirname "$(command -v nvcc)")")}
HDR=$(ls "$CUDA_HOME"/include/cuda.h "$CUDA_HOME"/targets/x86_64-linux/include/cuda.h 2>/dev/null | head -1)
LIBCUDA=$(python3 -c "import ctypes; ctypes.CDLL('libcuda.so.1'); print([l.split()[-1] for l in open('/proc/self/maps') if 'libcuda.so' in l][0])")
echo "header $HDR; driver $LIBCUDA"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/gpu.txt"
# Every declaration in cuda.h, one per line (the header's own macros map names to versions).
python3 - "$HDR" > "$OUT/cuda_h_functions.txt" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
for m in re.finditer(r"CUresult\s+CUDAAPI\s+(\w+)\s*\(([^;{]*?)\)\s*;", text):
    print(m.group(1) + "\t" + " ".join(m.group(2).split()))
PY
grep -c . "$OUT/cuda_h_functions.txt"
grep -E '^#define cu\w+ +cu\w+' "$HDR" | awk '{print $2, $3}' > "$OUT/cuda_h_defines.txt"
nm -D --defined-only "$LIBCUDA" | awk '$3 ~ /^cu/ {print $3}' | sort > "$OUT/libcuda_exports.txt"
wc -l "$OUT/libcuda_exports.txt"
# cuGetProcAddress: which export each base name resolves to.
python3 - "$OUT/libcuda_exports.txt" > "$OUT/procaddr.jsonl" <<'PY'
import ctypes, json, sys
cu = ctypes.CDLL("libcuda.so.1")
cu.cuInit(0)
exports = [l.strip() for l in open(sys.argv[1]) if l.strip()]
addr = {}
for name in exports:
    try:
        addr[ctypes.cast(getattr(cu, name), ctypes.c_void_p).value] = name
    except AttributeError:
        pass
bases = sorted({n.split("_ptsz")[0].split("_ptds")[0] for n in exports})
bases = sorted({b[:-3] if b[-3:-1] == "_v" and b[-1].isdigit() else b for b in bases})
for base in bases:
    for version in (12000, 12080, 13000, 13020):
        for flags in (0, 2):
            f = ctypes.c_void_p(); st = ctypes.c_int(-1)
            r = cu.cuGetProcAddress_v2(base.encode(), ctypes.byref(f), version, ctypes.c_uint64(flags), ctypes.byref(st))
            print(json.dumps({"base": base, "version": version, "flags": flags, "result": r,
                              "status": st.value, "symbol": addr.get(f.value) if f.value else None}))
PY
wc -l "$OUT/procaddr.jsonl"
nvcc -O1 -arch=sm_90 -o "$W/capture_probe" "$ROOT/scripts/gpu/transparency/capture_probe.cu" -lcuda && \
  timeout 120 "$W/capture_probe" > "$OUT/capture_probe.jsonl" 2> "$OUT/capture_probe.err"
echo "capture probe rc=$? lines=$(wc -l < "$OUT/capture_probe.jsonl")"
# The exports whose declaration takes a stream (or a launch configuration, which names one):
# crates/interposer/tests/data/driver-stream-functions.txt, checked against Baton's hooks.
python3 - "$OUT/cuda_h_functions.txt" "$OUT/libcuda_exports.txt" "$(cat "$OUT/gpu.txt")" > "$OUT/stream_functions.txt" <<'PY'
import re, sys
decl = dict(l.rstrip("\n").split("\t", 1) for l in open(sys.argv[1]) if "\t" in l)
print(f"# libcuda.so.1 exports whose cuda.h declaration takes a CUstream or a CUlaunchConfig ({sys.argv[3].strip()}; scripts/gpu/transparency/discover.sh)")
for name in (l.strip() for l in open(sys.argv[2]) if l.strip()):
    base = re.sub(r"_pt(sz|ds)$", "", name)
    params = decl.get(base) or decl.get(re.sub(r"_v\d+$", "", base))
    if params and re.search(r"\bCUstream\b|CUlaunchConfig", params):
        print(name)
PY
wc -l "$OUT/stream_functions.txt"
