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
