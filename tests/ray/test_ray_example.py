"""examples/ray/scoring.py on the test pool: Python and Java tasks agree, find the planted items,
and equal the single-process run."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np

import isthmus.ray

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "ray"


def _example():
    spec = importlib.util.spec_from_file_location("ray_scoring_example", EXAMPLE / "scoring.py")
    module = sys.modules[spec.name] = importlib.util.module_from_spec(spec)  # cloudpickle looks it up there
    spec.loader.exec_module(module)
    return module


def test_scoring_example_python_and_java_tasks_agree(pool):
    import ray

    example = _example()
    ray.cloudpickle.register_pickle_by_value(example)
    catalog, planted, shards = example.dataset(queries=3001, items=67, dim=16, shards=5, seed=3)
    py = pool.map(example.score_shard, shards)
    java = pool.map(isthmus.ray.JavaTask("example.ScoringShard"), shards)
    local = isthmus.ray.run_local(example.score_shard, shards)
    for (pb, pp), (jb, jp), (lb, lp) in zip(py, java, local):
        assert pb.dtype == np.int32 and pp.dtype == np.float32
        assert np.array_equal(pb, jb) and np.array_equal(pp, jp) and np.array_equal(pb, lb) and np.array_equal(pp, lp)
    best = np.concatenate([b for b, _ in java])
    queries = np.concatenate([q for q, _ in shards])
    want = np.argmax(queries.astype(np.float64) @ catalog.T.astype(np.float64), axis=1)
    assert np.mean(best == want) > 0.999  # a near-tie may go either way in float32
    assert np.mean(best == planted) > 0.9  # and the job finds what was planted
