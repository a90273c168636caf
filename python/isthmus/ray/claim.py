"""Which device a device actor owns.

- A device id given for the actor (``"opencl:1"``, ``"cuda:0"``): that one.
- CUDA: the GPU Ray assigned (``ray.get_gpu_ids()``). Ray sets ``CUDA_VISIBLE_DEVICES`` for the
  actor, so the assigned GPU is ``cuda:0`` inside it; where it did not (more GPUs visible than
  assigned), the assigned id is used as the index.
- OpenCL (no GPU assigned): Ray does not name OpenCL devices, so the actor claims the first free one
  on its node, GPUs first: a claim is an exclusive ``flock`` on a node-local file per device, held
  while the actor lives and let go by the kernel when its process ends (so a restarted actor can
  take the device of the one that died).
"""
from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from isthmus.device import _ORDER, Device, device as device_by_id, devices
from isthmus.errors import BackendUnavailableError, InvalidArgumentError, IsthmusError

BACKENDS = ("auto", "cuda", "opencl")
KINDS = (None, "gpu", "cpu", "accelerator")
CLAIM_WAIT_S = 15.0  # a replacement actor may start before the kernel has closed its predecessor's files


class DeviceActorError(IsthmusError):
    """A device actor could not start or keep running: no device for it, restarts used up."""


def choose(backend: str, wanted: str | None, kind: str | None, gpu_ids: list) -> tuple[Device, object]:
    """(the device, the claim to keep open or None) for an actor that Ray gave ``gpu_ids``."""
    if wanted is not None:
        return device_by_id(wanted), None
    if backend == "cuda" or (backend == "auto" and gpu_ids):
        return _assigned_gpu(gpu_ids), None
    return _claim_opencl(kind)


def _assigned_gpu(gpu_ids: list) -> Device:
    if not gpu_ids:
        raise DeviceActorError("backend 'cuda' but Ray assigned this actor no GPU: create the pool with "
                               "actor_options={'num_gpus': 1}")
    cuda = [d for d in devices() if d.backend == "cuda"]
    if not cuda:
        raise BackendUnavailableError(f"Ray assigned GPU(s) {list(gpu_ids)} but isthmus sees no CUDA device: "
                                      "install isthmus[cuda] on every node")
    index = 0 if len(cuda) <= len(gpu_ids) else int(gpu_ids[0])
    if index >= len(cuda):
        raise DeviceActorError(f"Ray assigned GPU {gpu_ids[0]} but only {len(cuda)} CUDA devices are visible")
    return cuda[index]


def _claim_opencl(kind: str | None) -> tuple[Device, object]:
    found = [d for d in devices() if d.backend == "opencl" and (kind is None or d.kind == kind)]
    if not found:
        what = f"OpenCL {kind} device" if kind else "OpenCL device"
        raise BackendUnavailableError(f"no {what} on this node for the device actor; install an OpenCL driver "
                                      "(PoCL for CPUs) or ask for another kind")
    found.sort(key=lambda d: _ORDER.get(d.kind, 3))
    deadline = time.monotonic() + CLAIM_WAIT_S
    while True:
        for d in found:
            claim = _try_claim(d)
            if claim is not None:
                return d, claim
        if time.monotonic() >= deadline:
            raise DeviceActorError(
                f"all {len(found)} OpenCL device(s) on this node ({', '.join(d.id for d in found)}) are owned by "
                "other isthmus device actors; ask for fewer actors, or name each actor's device (devices=[...])")
        time.sleep(0.2)


def _try_claim(d: Device):
    import fcntl

    folder = Path(tempfile.gettempdir()) / f"isthmus-ray-claims-{os.getuid()}"
    folder.mkdir(parents=True, exist_ok=True)
    f = open(folder / f"{d.id.replace(':', '-')}.lock", "a+")
    try:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        f.close()
        return None
    f.seek(0)
    f.truncate()
    f.write(f"{os.getpid()}\n")
    f.flush()
    return f


def check_choice(backend: str, kind: str | None) -> None:
    if backend not in BACKENDS:
        raise InvalidArgumentError(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    if kind not in KINDS:
        raise InvalidArgumentError(f"kind must be one of gpu, cpu, accelerator or None, got {kind!r}")
