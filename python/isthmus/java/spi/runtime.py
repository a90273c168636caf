"""``io.isthmus.spi.Runtime``: the runtime attached to the JVM (``io.isthmus.Isthmus.get()``)."""
from __future__ import annotations

import threading

import jpype
import numpy as np

import isthmus

from . import ops
from .buffers import BufferHandle, buffer, host_view
from .devices import device_handle
from .proxy import implements, spi


@implements("io.isthmus.spi.Runtime")
class Runtime:
    """The runtime attached to the JVM (``io.isthmus.Isthmus.get()``)."""

    def __init__(self):
        self.threads: list[threading.Thread] = []

    @spi
    def devices(self):
        return jpype.JArray(jpype.JClass("io.isthmus.spi.DeviceHandle"))(
            [device_handle(d) for d in isthmus.devices()])

    @spi
    def device(self, id):
        return device_handle(isthmus.device(None if id is None else str(id)))

    @spi
    def op(self, name, jargs, jout, joptions):
        return ops.call(ops.op_function(str(name)), jargs, jout, joptions)

    @spi
    def library(self, name):
        return ops.OpHandle(name=str(name))

    # The deprecated one-method-per-op SPI (io.isthmus.Ops no longer calls it).
    @spi
    def axpy(self, a, x, y):
        isthmus.ops.axpy(float(a), buffer(x, "x"), buffer(y, "y"))

    @spi
    def sum(self, x):
        return self._new("sum", x)

    @spi
    def max(self, x):
        return self._new("max", x)

    @spi
    def softmax(self, x):
        return self._new("softmax", x)

    @spi
    def transpose(self, x):
        return self._new("transpose", x)

    @spi
    def gemm(self, a, b, c, alpha, beta, trans_a, trans_b):
        cb = None if c is None else buffer(c, "c")
        out = isthmus.ops.gemm(buffer(a, "a"), buffer(b, "b"), cb, float(alpha), float(beta), trans_a=bool(trans_a),
                               trans_b=bool(trans_b))
        return c if out is cb and cb is not None else BufferHandle(out, owned=True)

    def _new(self, name, x):
        return BufferHandle(ops.op_function(name)(buffer(x, "x")), owned=True)

    @spi
    def tune(self, kernel, device, problem, dtype, strategy, budget, seconds, seed):
        from isthmus.tune.java_spi import tune

        return tune(kernel, device.device, problem, dtype, strategy, budget, seconds, seed)

    @spi
    def declare(self, name, source, entry, tunables, defaults, restrictions, problem, dtype, output, space):
        from isthmus.tune.java_spi import declare

        declare(name, source, entry, tunables, defaults, restrictions, problem, dtype, output, space)

    @spi
    def tunedConfig(self, kernel, device, problem, dtype):
        from isthmus.tune.java_spi import tuned_config

        return tuned_config(kernel, device.device, problem, dtype)

    @spi
    def startThreads(self, body, prefix, count):
        for _ in range(int(count)):
            t = threading.Thread(target=body.run, name=f"{prefix}-{len(self.threads)}", daemon=True)
            self.threads.append(t)
            t.start()

    @spi
    def liveBuffers(self):
        return isthmus.live_buffers()

    @spi
    def version(self):
        return f"isthmus {isthmus.__version__}, jpype {jpype.__version__}, numpy {np.__version__}"

    @spi
    def hostAddress(self, buf):
        return host_view(buf, np.uint8, (int(buf.limit()) - int(buf.position()),)).ctypes.data

    def join_threads(self, timeout: float) -> None:
        for t in self.threads:
            t.join(timeout)
        self.threads = [t for t in self.threads if t.is_alive()]
