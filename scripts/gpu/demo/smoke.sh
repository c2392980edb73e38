#!/usr/bin/env bash
# After a change that moves GPU code: does every GPU path still run? `baton doctor` (the level
# and spatial self-tests), `baton demo` on the GPU, a PyTorch program under `baton run` with a
# BATON_REPORT, and the one-line notice when Baton cannot open the driver. Expects release
# binaries in .gpu/ (baton, libbaton_interposer.so side by side) and writes to $OUT.
set -u
nvidia-smi -L
B=.gpu/baton
timeout 120 $B doctor --json > $OUT/doctor.json 2> $OUT/doctor.err; echo "doctor rc=$?"
timeout 150 $B demo --duration-s 2 --json > $OUT/demo.json 2> $OUT/demo.err; echo "demo rc=$?"
BATON_REPORT=$OUT/report.json timeout 60 $B run -- python3 -c "import torch; x=torch.randn(2000,2000,device='cuda'); y=x@x; torch.cuda.synchronize(); print('sum', float(y.sum()))" > $OUT/torch.txt 2>&1; echo "torch rc=$?"
BATON_CUDA_LIB=/nonexistent/libcuda.so.1 BATON_LOCAL=1 timeout 60 $B run --local -- python3 -c "import torch; print('cuda', torch.cuda.is_available())" > $OUT/notice.txt 2>&1; echo "notice rc=$?"
head -c 1500 $OUT/doctor.json; echo; tail -5 $OUT/doctor.err
python3 -c "import json;d=json.load(open('$OUT/demo.json'));print(d.get('schema'), list(d)[:8])" ; tail -5 $OUT/demo.err
cat $OUT/torch.txt; python3 -c "import json;d=json.load(open('$OUT/report.json'));print(d['schema'], d['kernels'], d['commands'], d['enabled'])"
cat $OUT/notice.txt
