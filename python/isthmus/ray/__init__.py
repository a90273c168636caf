"""isthmus on a Ray cluster: device actors, sharded maps from Python and Java, tuned configs everywhere.

Needs the ``ray`` extra (``pip install 'isthmus[ray]'``) on every node. Nothing here imports Ray or
touches a device at import time.

>>> import numpy as np, ray, isthmus, isthmus.ray
>>> ray.init()
>>> shards = [np.random.rand(1000, 64).astype(np.float32) for _ in range(8)]
>>> with isthmus.ray.DevicePool(2) as pool:                 # two actors, one device each
...     out = pool.map(lambda dev, bufs: isthmus.ops.softmax(bufs[0]), shards)   # in shard order
...     pool.tune("softmax", {"rows": 1000, "cols": 64}, budget=8)   # once per device model
>>> same = isthmus.ray.run_local(lambda dev, bufs: isthmus.ops.softmax(bufs[0]), shards)  # no Ray

Parts: ``pool.py`` (DevicePool: actors, replacement), ``actor.py`` (the device actor),
``claim.py`` (which device an actor owns), ``pipeline.py`` (upload / compute / download overlap
inside an actor, through the device's transfer lane), ``tasks.py`` (Python callables, Java
``io.isthmus.ShardTask``),
``shards.py`` (shard and result forms), ``scheduler.py`` (map: order, retries, reruns),
``tuning.py`` (tune once per device model, install everywhere).

The package is named after Ray and imports it by absolute name; inside it ``import ray`` is Ray.
"""
from __future__ import annotations

from isthmus.device import device as get_device

from .claim import DeviceActorError
from .pipeline import Pipeline
from .pool import DevicePool
from .scheduler import MapReport, ShardError
from .shards import shard_arrays
from .tasks import JavaTask, JavaTaskError, check_task, java_call
from .tuning import TuningReport


def map(task, shards, *, actors: int = 1, batch: int = 1, on_result=None, **pool_options) -> list:  # noqa: A001
    """``task`` over ``shards`` on a pool of ``actors`` device actors made for this call (see
    :class:`DevicePool` for ``pool_options``); the results in shard order."""
    with DevicePool(actors, **pool_options) as pool:
        return pool.map(task, shards, batch=batch, on_result=on_result)


def run_local(task, shards, device=None, *, classpath=None) -> list:
    """The same job in this process on one device, without Ray: the reference a cluster run must
    equal, and the baseline of its overhead. ``classpath`` starts this process's JVM for a JavaTask."""
    check_task(task)
    dev = get_device(device)
    call = task
    if isinstance(task, JavaTask):
        import isthmus.java

        if classpath is not None:
            isthmus.java.start(classpath)
        call = java_call(task, dev, isthmus.java.started())
    arrays = [shard_arrays(s, i) for i, s in enumerate(shards)]
    pipe = Pipeline(dev, depth=1)
    try:
        return [pipe.run(call, a, i) for i, a in enumerate(arrays)]
    finally:
        pipe.close()


__all__ = ["DeviceActorError", "DevicePool", "JavaTask", "JavaTaskError", "MapReport", "ShardError",
           "TuningReport", "map", "run_local"]
