"""Why an allocating library call on a GPU OpenCL device can be slower than the direct call (diagnostic).

    python -m benchmarks opencl_host_waits [--device opencl:0] [--side 8192]

For a 64M float32 sum and an 8192x8192 softmax: the host µs per call of 20 back-to-back calls
(a call that waits for the device shows the device's time here), the wall µs per call with the
final wait, and the device ms per call as ``isthmus bench`` measures it, for the library call, the
call with ``out=``, the direct PyOpenCL call of the launches it recorded, the call with the free
buffer cache off, the call with every result kept, and the softmax call after the cache was
filled to its limit with buffers of another size (as earlier benchmarks leave it). Prints only.
"""
from __future__ import annotations

import argparse

import numpy as np

from isthmus import measure

SMOKE = ["--side", "128"]


def host_and_wall(dev, fn, calls: int = 20) -> tuple[float, float]:
    """Host µs per call of ``calls`` back-to-back calls (a call that waits for the device shows
    the device's time here), and wall µs per call with the final wait."""
    host = measure.per_call_us(fn, calls, dev.synchronize, rounds=1, warmup=3)
    wall = measure.device_times(measure.WallClock(dev.synchronize), fn, repeat=1, warmup=0, batch=calls).median
    return host, wall * 1e3


def main(argv=None) -> int:
    import isthmus
    from isthmus.cli.bench import DirectCalls
    from isthmus.record import recording

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="opencl:0")
    p.add_argument("--side", type=int, default=8192, help="softmax rows = cols; the sum has side**2 elements")
    a = p.parse_args(argv)
    dev = isthmus.device(a.device)
    rng = np.random.default_rng()
    v = dev.asarray(rng.random(a.side ** 2, dtype=np.float32))
    s = dev.empty(1, np.float32)
    m = dev.asarray(rng.random((a.side, a.side), dtype=np.float32))
    mo = dev.empty((a.side, a.side), np.float32)
    from isthmus import knobs

    limit = knobs.opencl_pool_bytes()

    def row(name, fn, batch=10):
        host, wall = host_and_wall(dev, fn)
        ms = measure.device_ms(dev, fn, batch=batch)
        print(f"{dev.id} {name:44s} host {host:8.1f} us/call  wall {wall:8.1f} us/call  device {ms * 1e3:8.1f} us/call "
              f"(pool {dev.allocator._pooled >> 20} MiB)", flush=True)

    for label, call, out_call in ((f"sum {a.side}^2", lambda: isthmus.ops.sum(v), lambda: isthmus.ops.sum(v, out=s)),
                                  (f"softmax {a.side}^2", lambda: isthmus.ops.softmax(m),
                                   lambda: isthmus.ops.softmax(m, out=mo))):
        with recording(dev) as rec:
            call()
        direct = DirectCalls(dev, rec)
        row(f"{label}", call)
        row(f"{label} out=", out_call)
        row(f"{label} direct", direct)
        dev._pool_limit = 0
        dev.free_pool()
        row(f"{label} no free-buffer cache", call)
        dev._pool_limit = limit
        kept: list = []
        row(f"{label} every result kept", lambda: kept.append(call()), batch=2)
        for b in kept:
            b.close()
        kept.clear()
        dev.free_pool()
        fill = [dev.empty((limit // 4 - 1024,), np.float32)]  # one buffer of another size, the cache's whole room
        del fill
        row(f"{label} cache full of another size", call)
        dev.free_pool()
        row(f"{label} again", call)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
