"""The MPS control daemon for the GPU benchmarks: started with its pipe and log directories
under a run's temporary directory, stopped afterwards. The co-location matrix
goes through here."""

import os
import subprocess
import time


def mps(tmp, env, on):
    """Starts (ON) or stops the control daemon whose directories are under TMP. Starting returns
    the environment its clients need (ENV plus the pipe and log directories); stopping, None.
    Where ENV names a GPU by CUDA_VISIBLE_DEVICES the daemon serves that GPU alone, and its
    clients name it by its UUID: without the variable PyTorch counts every GPU of the machine
    (through NVML) while CUDA, through the daemon, sees one."""
    d = os.path.join(tmp, "mps")
    env = dict(env, CUDA_MPS_PIPE_DIRECTORY=d, CUDA_MPS_LOG_DIRECTORY=d)
    if on:
        os.makedirs(d, exist_ok=True)
        subprocess.run(["nvidia-cuda-mps-control", "-d"], env=env, check=True)
        time.sleep(1)
        gpu = env.get("CUDA_VISIBLE_DEVICES")
        if gpu and not gpu.startswith("GPU-"):
            uuid = subprocess.run(
                ["nvidia-smi", "-i", gpu, "--query-gpu=uuid", "--format=csv,noheader"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout.strip()
            env["CUDA_VISIBLE_DEVICES"] = uuid
        return env
    subprocess.run(["nvidia-cuda-mps-control"], input="quit\n", text=True, env=env)
    time.sleep(2)
    return None
