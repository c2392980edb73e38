#!/usr/bin/env python3
"""A CUDA-graph replay service beside a training loop in one process.

The service captures ResNet-50 (fp16, batch 8) inference into a CUDA graph once, on a stream
it gives priority 10, while the training loop already runs in another thread; each request
then replays the graph. Baton keeps a capture intact while another scheduled stream is busy
(its threads never make a call a capture forbids), and the replayed results must equal the
eagerly computed ones, which the example checks.

    baton run -- python examples/python/graph_replay_service.py
    baton run -- python examples/python/graph_replay_service.py --hints off   # compare
"""

import torch

import harness

a = harness.args(__doc__.splitlines()[1])
HINTS = harness.hints_on(a)
if HINTS:
    import baton

torch.manual_seed(0)
model = harness.resnet50().to("cuda").half().eval()
static_x = torch.randn(8, 3, 224, 224, device="cuda", dtype=torch.half)
stream = torch.cuda.Stream()
if HINTS:
    baton.set_stream_priority(stream, 10)

with torch.no_grad(), torch.cuda.stream(stream):
    for _ in range(3):
        model(static_x)  # warm-up on the capturing stream, as CUDA graphs need
    eager = model(static_x).float()
    stream.synchronize()

trainer = harness.Trainer(HINTS)
trainer.start()  # the capture happens under contention
graph = torch.cuda.CUDAGraph()
# thread_local: the training thread may go on synchronizing its own work during the capture.
with torch.no_grad(), torch.cuda.graph(graph, stream=stream, capture_error_mode="thread_local"):
    static_y = model(static_x)
trainer.stop()


def request():
    with torch.cuda.stream(stream):
        graph.replay()
    stream.synchronize()


def check():
    request()
    diff = (static_y.float() - eager).abs().max().item()
    return {"max_abs_diff_vs_eager": diff, "equal": diff == 0.0}


harness.run_phases(a, "graph_replay_service", request, trainer, check)
