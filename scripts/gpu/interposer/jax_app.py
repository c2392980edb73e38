"""JAX transparency check: jitted functions, a scan, a matrix product, a gradient."""

import hashlib
import json
import os

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
# Deterministic kernels and no timing-based autotuning, so two native runs agree bit for bit.
os.environ.setdefault("XLA_FLAGS", "--xla_gpu_deterministic_ops=true --xla_gpu_autotune_level=0")
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

key = jax.random.PRNGKey(0)
k1, k2 = jax.random.split(key)
w = jax.random.normal(k1, (512, 512), dtype=jnp.float32)
x = jax.random.normal(k2, (64, 512), dtype=jnp.float32)


@jax.jit
def loss(w, x):
    def body(h, _):
        h = jnp.tanh(h @ w)
        return h, h.sum()

    h, sums = jax.lax.scan(body, x, None, length=8)
    return (h**2).mean() + sums.mean() * 1e-3


g = jax.jit(jax.grad(loss))(w, x)
v = loss(w, x)
h = hashlib.sha256()
for t in (np.asarray(g), np.asarray(v)):
    h.update(t.tobytes())
print(json.dumps({"app": "jax", "checksum": h.hexdigest()[:16], "devices": str(jax.devices())}))
