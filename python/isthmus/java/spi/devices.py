"""``io.isthmus.spi.DeviceHandle``: one Python Device seen from Java (one handle per device)."""
from __future__ import annotations

import jpype
import numpy as np

from isthmus.errors import InvalidArgumentError

from . import buffers
from .buffers import BufferHandle, host_view, shape
from .kernels import KernelHandle
from .launches import FusedHandle, GraphHandle
from .ops import OpHandle
from .proxy import implements, reads


@implements("io.isthmus.spi.DeviceHandle")
class DeviceHandle:
    """A Python Device seen from Java."""

    def __init__(self, device):
        self.device = device

    id = reads("device.id")
    name = reads("device.name")
    vendor = reads("device.vendor")
    backend = reads("device.backend")
    memory = reads("device.memory", int)
    computeUnits = reads("device.compute_units", int)
    maxWorkGroupSize = reads("device.max_work_group_size", int)

    def memoryInUse(self):
        return int(self.device.memory_in_use())

    def freePool(self):
        self.device.free_pool()

    def allocate(self, dtype, jshape):
        return BufferHandle(self.device.empty(shape(jshape), str(dtype)), owned=True)

    def fromArray(self, array, jshape):
        host = np.asarray(array).reshape(shape(jshape))  # the one copy: JPype's bulk read
        return BufferHandle(self.device.asarray(host), owned=True)

    def fromBuffer(self, data, dtype, jshape):
        return BufferHandle(self.device.asarray(host_view(data, str(dtype), shape(jshape))), owned=True)

    def allocateHost(self, dtype, jshape):
        array = self.device.empty_host(shape(jshape), str(dtype))
        order = jpype.JClass("java.nio.ByteOrder").nativeOrder()
        if array.nbytes == 0:
            return jpype.JClass("java.nio.ByteBuffer").allocateDirect(0).order(order)
        # the direct buffer holds a reference to the array, so the pinned memory lives as long
        # as the ByteBuffer does
        return jpype.nio.convertToDirectBuffer(array).order(order)

    def op(self, name):
        return OpHandle(self.device.library(str(name)))

    def compile(self, source, name, names, values):
        defines = {str(k): (None if v is None else str(v)) for k, v in zip(names, values)}
        for k, v in defines.items():
            if v is None:
                raise InvalidArgumentError(f"define {k!r} has a null value")
        return KernelHandle(self.device.compile(str(source), str(name), defines))

    def synchronize(self):
        self.device.synchronize()

    def capture(self, body):
        with self.device.capture() as graph:  # the Java body's device work, recorded
            body.run()
        return GraphHandle(graph)

    def fuse(self, expression):
        return FusedHandle(self.device.fuse(str(expression)))


_devices: dict[str, DeviceHandle] = {}


def device_handle(device) -> DeviceHandle:
    handle = _devices.get(device.id)
    if handle is None or handle.device is not device:
        handle = _devices[device.id] = DeviceHandle(device)
    return handle


buffers.device_handle = device_handle  # (BufferHandle.device)
