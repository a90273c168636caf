"""Bad input to the device API gets a typed IsthmusError on every device (issue 15, item 9)."""
import numpy as np
import pytest

import isthmus


@pytest.mark.parametrize("shape", [(2 ** 40,), (2 ** 62,), (2 ** 40, 2 ** 40), (2 ** 31, 2 ** 31, 16)])
def test_impossible_host_allocation_is_out_of_memory(dev, shape):
    with pytest.raises(isthmus.OutOfMemoryError, match="could not be allocated"):
        dev.empty_host(shape, np.float32)
    small = dev.empty_host((7,), np.float32)  # the device still works
    small[:] = 3
    assert small.sum() == 21


@pytest.mark.parametrize("bad", [[[1, 2], [3]], [1, [2, 3]], [[1.0], 2.0, [3.0, 4.0]]])
def test_ragged_list_to_asarray_is_invalid_argument(dev, bad):
    with pytest.raises(isthmus.InvalidArgumentError, match="rectangular"):
        dev.asarray(bad)


@pytest.mark.parametrize("where", ["comment", "body", "name"])
def test_source_with_a_lone_surrogate_is_invalid_argument(dev, where):
    source = {"comment": "__kernel void f(__global float* x) { x[0] = 1.0f; } // \ud800",
              "body": "__kernel void f(__global float* x) {\n x[0] = 1.0f; \udfff }",
              "name": "__kernel void f\ud800(__global float* x) { x[0] = 1.0f; }"}[where]
    with pytest.raises(isthmus.InvalidArgumentError, match="surrogate") as info:
        dev.compile(source, "f")
    str(info.value).encode("utf-8")
