#!/usr/bin/env python3
"""An LLM decode service and a training loop in one process.

The service raises its own priority for each request and, between tokens, tells Baton that
its next token's work is coming (an upcoming-work hint), so background work is made to yield
before the token's kernels arrive rather than after. The training loop runs in another thread
at priority 0 and soaks up the rest of the GPU.

    baton run -- python examples/python/llm_decode_beside_training.py
    baton run -- python examples/python/llm_decode_beside_training.py --hints off   # compare

Model: GPT-2-medium shape (24 layers, width 1024, 16 heads), fp16, random weights (nothing is
downloaded), batch 1, a 128-token prompt, 32 greedy new tokens through Hugging Face
`generate`; 20 ms think time between requests.
"""

import torch
from transformers import GPT2Config, GPT2LMHeadModel, StoppingCriteria, StoppingCriteriaList

import harness

a = harness.args(__doc__.splitlines()[1], think_ms=20.0)
HINTS = harness.hints_on(a)
if HINTS:
    import baton
    import baton.torch


class UpcomingToken(StoppingCriteria):
    """Called by `generate` after each token: the next token's work comes right away."""

    def __call__(self, input_ids, scores, **kwargs):
        baton.hint(upcoming_ms=0, expires_ms=2)
        return torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)


torch.manual_seed(0)
model = GPT2LMHeadModel(GPT2Config(n_layer=24, n_embd=1024, n_head=16)).to("cuda").half().eval()
prompt = torch.randint(0, 50000, (1, 128), device="cuda")
mask = torch.ones_like(prompt)
criteria = StoppingCriteriaList([UpcomingToken()]) if HINTS else None
plain_stream = torch.cuda.Stream()


def request():
    with torch.no_grad():
        if HINTS:
            with baton.torch.priority(10) as s:
                out = model.generate(input_ids=prompt, attention_mask=mask, max_new_tokens=32,
                                     min_new_tokens=32, do_sample=False, pad_token_id=0,
                                     stopping_criteria=criteria)
                s.synchronize()
        else:
            with torch.cuda.stream(plain_stream):
                out = model.generate(input_ids=prompt, attention_mask=mask, max_new_tokens=32,
                                     min_new_tokens=32, do_sample=False, pad_token_id=0)
                plain_stream.synchronize()
    assert out.shape[1] == 160, out.shape


for _ in range(3):
    request()
trainer = harness.Trainer(HINTS)
harness.run_phases(a, "llm_decode_beside_training", request, trainer)
