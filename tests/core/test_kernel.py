import numpy as np
import pytest

import isthmus
from isthmus.program import _options
from isthmus.signature import convert_scalar, parse_signature

SRC = """
// a comment with __kernel void fake(int x)
#define REAL float
typedef int index_t;
__kernel __attribute__((reqd_work_group_size(64, 1, 1)))
void k(const index_t n, const REAL a, __global const REAL* restrict x,
       __global T* y, unsigned int flags, __global void* raw) { }
"""


def test_signature_resolves_defines_and_typedefs():
    params = parse_signature(SRC, "k", {"T": "double"})
    assert [p.name for p in params] == ["n", "a", "x", "y", "flags", "raw"]
    assert [p.kind for p in params] == ["scalar", "scalar", "buffer", "buffer", "scalar", "buffer"]
    assert params[0].dtype == np.int32 and params[1].dtype == np.float32
    assert params[2].dtype == np.float32 and not params[2].writes
    assert params[3].dtype == np.float64 and params[3].writes
    assert params[4].dtype == np.uint32
    assert params[5].dtype is None


def test_missing_kernel_and_local_pointers_are_errors():
    with pytest.raises(isthmus.CompileError, match="no kernel named 'fake'"):
        parse_signature(SRC, "fake", {})
    with pytest.raises(isthmus.CompileError, match="__local"):
        parse_signature("__kernel void f(__local float* s) {}", "f", {})
    with pytest.raises(isthmus.CompileError, match="cannot pass"):
        parse_signature("__kernel void f(float4 v) {}", "f", {})


def test_no_parameters():
    assert parse_signature("__kernel void f(void) {}", "f", {}) == ()
    assert parse_signature("kernel void f() {}", "f", {}) == ()


def _p(ctype):
    return parse_signature(f"__kernel void f({ctype} v) {{}}", "f", {})[0]


@pytest.mark.parametrize("ctype,value,expected", [("int", 7, np.int32(7)), ("uchar", 255, np.uint8(255)),
                                                  ("long", -2**62, np.int64(-2**62)), ("float", 3, np.float32(3)),
                                                  ("double", 0.1, np.float64(0.1)), ("int", 4.0, np.int32(4))])
def test_scalars_convert_to_declared_types(ctype, value, expected):
    out = convert_scalar(value, _p(ctype), "t")
    assert out == expected and out.dtype == expected.dtype


@pytest.mark.parametrize("ctype,value,match", [("int", 2**31, "does not fit"), ("uchar", -1, "does not fit"),
                                               ("uint", 2**32, "does not fit"), ("int", 2.5, "int"),
                                               ("int", "3", "str"), ("float", 1e39, "overflows"),
                                               ("int", True, "bool"), ("float", None, "NoneType")])
def test_bad_scalars_are_rejected(ctype, value, match):
    with pytest.raises(isthmus.InvalidArgumentError, match=match):
        convert_scalar(value, _p(ctype), "t")


def test_defines_become_sorted_options_and_are_validated():
    assert _options({"B": 2, "A": "float", "C": True}) == ["-DA=float", "-DB=2", "-DC=1"]
    for bad in ({"1X": 1}, {"X": "a b"}, {"X": [1]}, {"X": 'x"'}):
        with pytest.raises(isthmus.InvalidArgumentError):
            _options(bad)


@pytest.mark.parametrize("value", ["1/**/+1", "x/**/;", "1//", "a\0b", "1\0", "1+1", "-x", "(1)", "1.0.0", "a.b",
                                   "é", "x\u00a0", "1e", "0x", "{", "#", "a-b", "1,2", 10 ** 30, -(2 ** 64)])
def test_define_values_outside_the_grammar_are_rejected(value):
    with pytest.raises(isthmus.InvalidArgumentError, match="define"):
        _options({"A": 1, "X": value, "Z": 2})


@pytest.mark.parametrize("value, text", [(42, "42"), (-7, "-7"), (1.5, "1.5"), (1e-05, "1e-05"), ("2.0f", "2.0f"),
                                         ("0x1F", "0x1F"), ("10u", "10u"), (".5", ".5"), ("-1.5e+3", "-1.5e+3"),
                                         ("float", "float"), ("MY_MACRO_2", "MY_MACRO_2"), (np.int64(3), "3"),
                                         (np.float32(0.25), "0.25"), (2 ** 64 - 1, str(2 ** 64 - 1)), ("", "")])
def test_define_values_in_the_grammar_pass_through(value, text):
    assert _options({"X": value}) == [f"-DX={text}"]


def test_define_names_must_be_ascii_identifiers():
    for bad in ({"é": 1}, {"A B": 1}, {1: 1}, {None: 1}, {"A\0": 1}, {"": 1}):
        with pytest.raises(isthmus.InvalidArgumentError, match="define name"):
            _options(bad)


_AFFINE = """
__kernel void affine(__global float* y, __global const float* x, const float a, const int n)
{
    const int i = (int)get_global_id(0);
    if (i < n) y[i] = a * x[i] + (float)i;
}
"""


def test_a_launch_sets_what_changed_and_every_result_is_the_calls_own(dev, rng):
    """A kernel object keeps its arguments between launches (OpenCL): calls that alternate outputs,
    inputs and scalars, pass the same scalar object again, or hand a freed buffer's memory to a new
    one (the pool), each write exactly their own result into their own output and nothing into the
    others."""
    n = 37
    k = dev.compile(_AFFINE, "affine")
    cfg = isthmus.LaunchConfig((64,), (32,))
    xs = [rng.standard_normal(n).astype(np.float32) for _ in range(2)]
    dx = [dev.asarray(x) for x in xs]
    ys = [dev.asarray(np.full(n, np.nan, np.float32)) for _ in range(2)]
    two = np.float32(2.0)  # one packed scalar object, passed again
    ramp = np.arange(n, dtype=np.float32)

    def check(y, x, a, others=()):
        # a*x + i may cancel to near zero, and the device may fuse it (fma): the bound is relative to
        # the terms' magnitudes, not to the result
        got, terms = y.to_numpy(), np.abs(np.float32(a) * x) + ramp
        assert np.all(np.abs(got - (np.float32(a) * x + ramp)) <= 1e-6 * terms), (got, a)
        for o, want in others:
            np.testing.assert_array_equal(o.to_numpy(), want)

    for yi, xi, a in [(0, 0, two), (1, 1, two), (0, 1, two), (0, 1, 3.0), (1, 0, 3.0), (1, 0, -1.5), (1, 0, two)]:
        before = ys[1 - yi].to_numpy()
        k(ys[yi], dx[xi], a, n, config=cfg)
        check(ys[yi], xs[xi], a, [(ys[1 - yi], before)])
    # a freed output's memory goes back to the pool and to the next buffer of its size
    keep = ys[0].to_numpy()
    ys[1].close()
    fresh = dev.asarray(np.full(n, np.nan, np.float32))
    k(fresh, dx[1], two, n, config=cfg)
    check(fresh, xs[1], two, [(ys[0], keep)])
    k(ys[0], dx[0], 0.5, n, config=cfg)
    check(ys[0], xs[0], 0.5)
    check(fresh, xs[1], 2.0)
    # a different n with the same scalar object elsewhere: only the first n2 elements are written
    n2 = 5
    poisoned = dev.asarray(np.full(n, np.nan, np.float32))
    k(poisoned, dx[0], two, n2, config=cfg)
    got = poisoned.to_numpy()
    assert np.all(np.abs(got[:n2] - (2 * xs[0][:n2] + ramp[:n2])) <= 1e-6 * (np.abs(2 * xs[0][:n2]) + ramp[:n2]))
    assert np.isnan(got[n2:]).all()


def test_scalars_of_any_number_type_are_converted_without_numpy_limits_or_error_states(dev, monkeypatch):
    """A parameter works out its checks once (at parse): converting NumPy scalars, JPype-like int
    and float subclasses and half-precision values per call asks NumPy for no limits objects and
    enters no error state (what made an eager call with two scalars cost ~10x its Plan.launch),
    and the checks still hold."""
    src = """__kernel void put(__global float* y, const int n, const float h, const float a, const ulong u)
    { if (get_global_id(0) == 0) { y[0] = (float)n; y[1] = h; y[2] = a; y[3] = (float)u; } }"""
    k = dev.compile(src, "put")
    half = parse_signature("__kernel void f(const half h) {}", "f", {})[0]
    y = dev.zeros(4, np.float32)
    cfg = isthmus.LaunchConfig((1,))

    class JInt(int):  # what JPype hands over for a Java int/long
        pass

    class JFloat(float):
        pass

    def refused(*a, **kw):
        raise AssertionError("NumPy limits or error state asked per call")

    monkeypatch.setattr(np, "iinfo", refused)
    monkeypatch.setattr(np, "finfo", refused)
    monkeypatch.setattr(np, "errstate", refused)
    for n, h, a, u in ((np.int64(7), np.float64(0.5), np.float64(2.5), np.uint8(9)), (JInt(7), JFloat(0.5), JFloat(2.5), JInt(9)),
                       (np.int16(7), np.float32(0.5), np.int32(2), 9.0)):
        k(y, n, h, a, u, config=cfg)
        assert y.to_numpy().tolist() == [7.0, 0.5, float(a), 9.0]
    with pytest.raises(isthmus.InvalidArgumentError, match="does not fit parameter 'n'"):
        k(y, np.int64(2**31), 0.5, 1.0, 1, config=cfg)
    with pytest.raises(isthmus.InvalidArgumentError, match="overflows parameter 'a'"):
        k(y, 1, 0.5, np.float64(3.5e38), 1, config=cfg)
    with pytest.raises(isthmus.InvalidArgumentError, match="overflows parameter 'a'"):
        k(y, 1, 0.5, 10**400, 1, config=cfg)
    with pytest.raises(isthmus.InvalidArgumentError, match="does not fit parameter 'u'"):
        k(y, 1, 0.5, 1.0, JInt(-1), config=cfg)
    assert convert_scalar(JFloat(65519.0), half, "f") == np.float16(65504)  # rounds down to half's largest
    with pytest.raises(isthmus.InvalidArgumentError, match="overflows parameter 'h'"):
        convert_scalar(np.float64(65520.0), half, "f")  # rounds to infinity
    assert np.isinf(convert_scalar(float("inf"), half, "f"))
