"""``io.isthmus.spi.KernelHandle``: a compiled kernel launched from Java on an explicit grid."""
from __future__ import annotations

import numpy as np

from isthmus.errors import LaunchConfigError
from isthmus.launch import LaunchConfig
from isthmus.memo import BoundedMemo
from isthmus.plan import Plan

from .buffers import arguments
from .launches import PlanHandle
from .proxy import implements, reads


@implements("io.isthmus.spi.KernelHandle")
class KernelHandle:
    """A compiled kernel, launched from Java on a grid."""

    def __init__(self, kernel):
        self.kernel = kernel
        self._configs = BoundedMemo(256)

    name = reads("kernel.name")

    def launch(self, jglobal, jlocal, jargs):
        self.kernel(*arguments(jargs), config=self._config(jglobal, jlocal))

    def memo(self, jglobal, jlocal, jargs):
        """The plan behind Java's launch memo (io.isthmus.Kernel): these exact arguments, checked
        and packed once, unpinned, so a closed buffer is freed at once and refused at launch."""
        return PlanHandle(Plan(self.kernel, arguments(jargs), self._config(jglobal, jlocal), pin=False))

    def prepare(self, jglobal, jlocal, jargs):
        args = arguments(jargs)
        return PlanHandle(self.kernel.prepare(*args, config=self._config(jglobal, jlocal)), args)

    def _config(self, jglobal, jlocal) -> LaunchConfig:
        if jglobal is None:
            raise LaunchConfigError(f"kernel {self.kernel.name!r} needs a grid: "
                                    "launch(LaunchConfig.of(globalSize), args...)")
        # The grid's raw bytes are the memo key: reading a long[] element by element costs more.
        key = (bytes(memoryview(jglobal)), None if jlocal is None else bytes(memoryview(jlocal)))
        config = self._configs.get(key)
        if config is None:
            config = self._configs[key] = LaunchConfig(tuple(np.asarray(jglobal).tolist()),
                                                       None if jlocal is None else tuple(np.asarray(jlocal).tolist()))
        return config
