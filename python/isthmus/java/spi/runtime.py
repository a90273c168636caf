"""``io.isthmus.spi.Runtime``: the runtime attached to the JVM (``io.isthmus.Isthmus.get()``)."""
from __future__ import annotations

import threading

import jpype
import numpy as np

import isthmus
from isthmus.ops import registry

from . import calls, llm, ops, tuning, weights
from .buffers import host_view
from .devices import device_handle
from .proxy import implements


@implements("io.isthmus.spi.Runtime")
class Runtime:
    """The runtime attached to the JVM (``io.isthmus.Isthmus.get()``)."""

    def __init__(self):
        self.threads: list[threading.Thread] = []

    def devices(self):
        return jpype.JArray(jpype.JClass("io.isthmus.spi.DeviceHandle"))(
            [device_handle(d) for d in isthmus.devices()])

    def device(self, id):
        return device_handle(isthmus.device(None if id is None else str(id)))

    def op(self, name, jargs, jout, joptions):
        return calls.call(registry.op(str(name)).run, jargs, jout, joptions)  # (the registry: library ops and users')

    def library(self, name):
        return ops.OpHandle(name=str(name))

    def tune(self, kernel, device, problem, dtype, strategy, budget, seconds, seed, flags):
        return tuning.tune(kernel, device.device, problem, dtype, strategy, budget, seconds, seed, flags)

    def declare(self, name, source, entry, tunables, defaults, restrictions, problem, dtype, output, space):
        tuning.declare(name, source, entry, tunables, defaults, restrictions, problem, dtype, output, space)

    def tunedConfig(self, kernel, device, problem, dtype):
        return tuning.tuned_config(kernel, device.device, problem, dtype)

    def startThreads(self, body, prefix, count):
        for _ in range(int(count)):
            t = threading.Thread(target=body.run, name=f"{prefix}-{len(self.threads)}", daemon=True)
            self.threads.append(t)
            t.start()

    def liveBuffers(self):
        return isthmus.live_buffers()

    def version(self):
        return isthmus.__version__

    def hostAddress(self, buf):
        return host_view(buf, np.uint8, (int(buf.limit()) - int(buf.position()),)).ctypes.data

    def loadSafetensors(self, path, device):
        return weights.load(path, device.device)

    def loadLlama(self, folder, device, options):
        return llm.load_model(folder, device.device, options)

    def loadTokenizer(self, folder):
        return llm.load_tokenizer(folder)

    def _join_threads(self, timeout: float) -> None:
        for t in self.threads:
            t.join(timeout)
        self.threads = [t for t in self.threads if t.is_alive()]
