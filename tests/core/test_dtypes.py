import numpy as np
import pytest

import isthmus
from isthmus.dtypes import BUFFER_DTYPES, lookup


def test_every_buffer_dtype_round_trips():
    for name in BUFFER_DTYPES:
        assert lookup(name).np == np.dtype(name)
        assert lookup(np.dtype(name)).name == name


@pytest.mark.parametrize("bad", [np.complex64, np.bool_, np.int16, "nonsense", object])
def test_unsupported_dtypes(bad):
    with pytest.raises(isthmus.UnsupportedDtypeError):
        lookup(bad)


def test_bfloat16_is_numpys_ml_dtypes_bfloat16_stored_as_ushort():
    import ml_dtypes

    dt = lookup("bfloat16")
    assert dt.np == np.dtype(ml_dtypes.bfloat16) and dt.np.itemsize == 2
    assert lookup(ml_dtypes.bfloat16) is dt and lookup(np.dtype(ml_dtypes.bfloat16)) is dt
    assert (dt.ctype, dt.acc, dt.is_float) == ("ushort", "float", True)
    with pytest.raises(isthmus.UnsupportedDtypeError):
        lookup(np.uint16)  # the storage type is no buffer dtype of its own
