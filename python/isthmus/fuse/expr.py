"""Elementwise expressions for :mod:`isthmus.fuse`: parsed with Python's ``ast``, typed by NumPy's
own promotion rules, evaluated by NumPy (the reference) and written out as OpenCL C.

Typing evaluates the expression with NumPy on one-element stand-ins: buffers and NumPy scalars are
"strong" (their dtype counts), Python numbers are "weak" (NEP 50: they take the other operand's
type). So every node gets exactly the dtype NumPy would give it, functions included.
"""
from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .. import knobs
from ..errors import InvalidArgumentError, UnsupportedDtypeError

_erf = np.vectorize(math.erf, otypes=[np.float64])
_erfc = np.vectorize(math.erfc, otypes=[np.float64])


def _like_sin(f):
    """A NumPy stand-in with np.sin's type rule (for functions NumPy lacks)."""
    return lambda x: np.asarray(f(x)).astype(np.asarray(np.sin(x)).dtype)


# name -> (number of arguments, NumPy function). All are OpenCL C built-ins with CUDA equivalents.
FUNCTIONS: dict[str, tuple[int, object]] = {
    **{n: (1, getattr(np, f)) for n, f in {
        "sin": "sin", "cos": "cos", "tan": "tan", "asin": "arcsin", "acos": "arccos", "atan": "arctan",
        "sinh": "sinh", "cosh": "cosh", "tanh": "tanh", "asinh": "arcsinh", "acosh": "arccosh", "atanh": "arctanh",
        "exp": "exp", "exp2": "exp2", "log": "log", "log2": "log2", "log10": "log10", "log1p": "log1p",
        "expm1": "expm1", "sqrt": "sqrt", "cbrt": "cbrt", "fabs": "fabs", "abs": "abs", "floor": "floor",
        "ceil": "ceil", "trunc": "trunc", "rint": "rint", "round": "rint"}.items()},
    "rsqrt": (1, lambda x: 1 / np.sqrt(x)),
    "exp10": (1, lambda x: np.power(np.asarray(np.exp(x)).dtype.type(10), x)),
    "erf": (1, _like_sin(_erf)), "erfc": (1, _like_sin(_erfc)),
    "pow": (2, np.power), "fmin": (2, np.fmin), "fmax": (2, np.fmax), "atan2": (2, np.arctan2),
    "hypot": (2, np.hypot), "fmod": (2, np.fmod), "copysign": (2, np.copysign),
    "fma": (3, lambda a, b, c: a * b + c), "mad": (3, lambda a, b, c: a * b + c),
}
_BINOPS = {ast.Add: ("+", lambda a, b: a + b), ast.Sub: ("-", lambda a, b: a - b),
           ast.Mult: ("*", lambda a, b: a * b), ast.Div: ("/", lambda a, b: a / b),
           ast.Pow: ("**", lambda a, b: a ** b)}
_CTYPES = {"float16": "float", "float32": "float", "float64": "double", "int8": "char", "int16": "short",
           "int32": "int", "int64": "long", "uint8": "uchar", "uint16": "ushort", "uint32": "uint",
           "uint64": "ulong"}
_MAX_INT_POWER = 16
MAX_DEPTH = 128  # tree levels of one expression; the recursive passes stay far from Python's limit


class ExpressionError(InvalidArgumentError):
    """A malformed or unsupported fused expression; ``column`` is 1-based."""

    def __init__(self, text: str, column: int, message: str):
        self.column = column
        shown = "".join("?" if 0xD800 <= ord(c) <= 0xDFFF else c for c in text)  # printable, same columns
        super().__init__(f"fused expression, column {column}: {message}\n  {shown}\n  {' ' * (column - 1)}^")


@dataclass(frozen=True)
class Expression:
    """A parsed ``target = expression``: the inputs in order of first use and the tree."""

    text: str
    target: str
    inputs: tuple[str, ...]
    tree: ast.expr
    eq_column: int  # where the '=' is (1-based), for errors about the output

    def error(self, node_or_column, message: str) -> ExpressionError:
        col = node_or_column if isinstance(node_or_column, int) else node_or_column.col_offset + 1
        return ExpressionError(self.text, col, message)

    def first_use(self, name: str) -> int:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Name) and node.id == name:
                return node.col_offset + 1
        return self.eq_column


@lru_cache(maxsize=1)
def _reserved() -> frozenset:
    """Names a kernel parameter must not take: C/OpenCL keywords and types, and every name the
    CUDA prelude defines (it is prepended to the kernel on CUDA)."""
    words = set("""auto break case char const continue default do double else enum extern float for goto if inline int
        long register restrict return short signed sizeof static struct switch typedef union unsigned void volatile
        while bool half uchar ushort uint ulong size_t ptrdiff_t intptr_t uintptr_t kernel global local constant
        private read_only write_only read_write true false template class namespace new delete this operator
        typename using virtual threadIdx blockIdx blockDim gridDim warpSize NULL""".split())
    try:
        prelude = (knobs.kernel_dir() / "cuda_prelude.h").read_text()
    except OSError:
        prelude = ""
    words.update(re.findall(r"#\s*define\s+(\w+)", prelude))
    words.update(re.findall(r"\btypedef\b[^;]*?(\w+)\s*;", prelude))
    words.update(re.findall(r"\b(\w+)\s*\([^;{]*\)\s*\{", prelude))
    return frozenset(words)


def parse(text: str) -> Expression:
    """Parse ``"target = expression"``; errors name the column."""
    if not isinstance(text, str) or not text.strip():
        raise InvalidArgumentError("a fused expression must be a non-empty string like 'out = a * x + y'")
    if "\n" in text.strip():
        raise ExpressionError(text, text.index("\n") + 1, "one line only: 'target = expression'")
    text = text.strip()
    # ASCII only: Python folds full-width and other compatibility letters into ASCII names (an input
    # 'ａ' would silently be 'a'), and ast's offsets are UTF-8 bytes, which are columns only in ASCII.
    wide = next((i for i, c in enumerate(text) if not c.isascii()), None)
    if wide is not None:
        raise ExpressionError(text, wide + 1, f"character {text[wide]!r} is not ASCII; names, numbers and "
                                              "operators must be ASCII (full-width letters look alike but are not)")
    try:
        module = ast.parse(text, mode="exec")
    except SyntaxError as exc:
        raise ExpressionError(text, max(1, exc.offset or 1), f"malformed expression ({exc.msg})") from None
    except (RecursionError, MemoryError):
        raise ExpressionError(text, 1, f"expression of {len(text)} characters is nested too deeply for the "
                                       f"parser; split it into several fused kernels") from None
    depth = _depth(module)
    if depth > MAX_DEPTH:
        raise ExpressionError(text, 1, f"expression nests {depth} operations deep, more than {MAX_DEPTH}; split "
                                       "it into several fused kernels (or group terms with parentheses)")
    if len(module.body) != 1 or not isinstance(module.body[0], ast.Assign):
        raise ExpressionError(text, module.body[0].col_offset + 1 if module.body else 1,
                              "expected one assignment 'target = expression'")
    assign = module.body[0]
    if len(assign.targets) != 1 or not isinstance(assign.targets[0], ast.Name):
        raise ExpressionError(text, assign.targets[-1].col_offset + 1, "the target must be one name: 'out = ...'")
    target = assign.targets[0].id
    eq = text.index("=", assign.targets[0].end_col_offset) + 1
    inputs: list[str] = []
    _check(text, assign.value, inputs)
    _check_name(text, target, assign.targets[0].col_offset + 1)
    return Expression(text, target, tuple(inputs), assign.value, eq)


def _depth(tree: ast.AST) -> int:
    """The tree's depth, found without recursion (typing, checking and emitting recurse over it)."""
    deepest, stack = 0, [(tree, 1)]
    while stack:
        node, d = stack.pop()
        deepest = max(deepest, d)
        stack.extend((child, d + 1) for child in ast.iter_child_nodes(node))
    return deepest


def _check_name(text: str, name: str, column: int) -> None:
    if not name.isascii() or name.startswith(("isthmus_", "get_", "__")) or name in _reserved():
        raise ExpressionError(text, column, f"{name!r} cannot name an input or output (it is reserved in "
                                            f"OpenCL C/CUDA); rename it")
    if name in FUNCTIONS:
        raise ExpressionError(text, column, f"{name!r} is a function; call it as {name}(...)")


def _check(text: str, node: ast.AST, inputs: list[str]) -> None:
    """Only numbers, names, + - * / **, unary -/+ and calls of FUNCTIONS are allowed."""
    col = getattr(node, "col_offset", 0) + 1
    if isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
            raise ExpressionError(text, col, f"constant {node.value!r} is not a real number")
    elif isinstance(node, ast.Name):
        _check_name(text, node.id, col)
        if node.id not in inputs:
            inputs.append(node.id)
    elif isinstance(node, ast.BinOp):
        if type(node.op) not in _BINOPS:
            op = text[node.left.end_col_offset:node.right.col_offset].strip() or type(node.op).__name__
            raise ExpressionError(text, node.left.end_col_offset + 1 + (len(text[node.left.end_col_offset:]) -
                                  len(text[node.left.end_col_offset:].lstrip())),
                                  f"operator {op!r} is not supported; use + - * / ** or a function")
        _check(text, node.left, inputs)
        _check(text, node.right, inputs)
    elif isinstance(node, ast.UnaryOp):
        if not isinstance(node.op, (ast.USub, ast.UAdd)):
            raise ExpressionError(text, col, "only unary - and + are supported")
        _check(text, node.operand, inputs)
    elif isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or node.func.id not in FUNCTIONS:
            name = node.func.id if isinstance(node.func, ast.Name) else ast.unparse(node.func)
            raise ExpressionError(text, col, f"unknown function {name!r}; known: {', '.join(sorted(FUNCTIONS))}")
        arity = FUNCTIONS[node.func.id][0]
        if node.keywords or len(node.args) != arity:
            raise ExpressionError(text, col, f"{node.func.id}() takes {arity} positional argument"
                                             f"{'s' if arity > 1 else ''}, got {len(node.args) + len(node.keywords)}")
        for a in node.args:
            _check(text, a, inputs)
    else:
        raise ExpressionError(text, col, f"{type(node).__name__.lower()} is not supported in an elementwise "
                                         f"expression (numbers, names, + - * / **, functions)")


# ---- evaluation: the NumPy reference, and typing with stand-ins ------------------------------
def evaluate(expr: Expression, env: dict):
    """The expression evaluated by NumPy over ``env`` (arrays and scalars by input name)."""
    with np.errstate(all="ignore"):
        return _eval(expr, expr.tree, env, {})


def _eval(expr: Expression, node, env: dict, types: dict | None):
    if isinstance(node, ast.Constant):
        value = node.value
    elif isinstance(node, ast.Name):
        value = env[node.id]
    elif isinstance(node, ast.UnaryOp):
        x = _eval(expr, node.operand, env, types)
        value = -x if isinstance(node.op, ast.USub) else +x
    elif isinstance(node, ast.BinOp):
        a, b = _eval(expr, node.left, env, types), _eval(expr, node.right, env, types)
        try:
            value = _BINOPS[type(node.op)][1](a, b)
        except (ValueError, ZeroDivisionError, OverflowError, TypeError) as exc:
            raise expr.error(node, f"NumPy rejects this operation: {exc}") from None
    else:  # ast.Call
        args = [_eval(expr, a, env, types) for a in node.args]
        try:
            value = FUNCTIONS[node.func.id][1](*args)
        except (ValueError, OverflowError, TypeError) as exc:
            raise expr.error(node, f"NumPy rejects this call: {exc}") from None
    if types is not None:
        types[id(node)] = _type_of(value)
    return value


def _type_of(value):
    """np.dtype for a strong value, the Python type (int or float) for a weak one."""
    if isinstance(value, (bool, np.bool_)):
        return np.dtype(bool)
    return type(value) if type(value) in (int, float) else np.asarray(value).dtype


def stand_in(kind) -> object:
    """A one-element value with the typing behaviour of an input: a dtype (strong) or int/float (weak)."""
    return kind(1) if kind is int or kind is float else np.ones(1, kind)  # (np.dtype('float64') == float is True)


def infer(expr: Expression, kinds: dict) -> dict:
    """id(node) -> dtype or Python type, for every node, under the given input kinds."""
    types: dict = {}
    with np.errstate(all="ignore"):
        _eval(expr, expr.tree, {n: stand_in(k) for n, k in kinds.items()}, types)
    for node in ast.walk(expr.tree):
        t = types.get(id(node))
        if isinstance(t, np.dtype) and t.name not in _CTYPES:
            raise expr.error(node, f"this yields {t}, which fused kernels do not support "
                                   f"(real integer and floating types only)")
    return types


# ---- code generation -------------------------------------------------------------------------
def ctype(dt: np.dtype) -> str:
    """The C type arithmetic of dtype ``dt`` is done in (float for float16)."""
    return _CTYPES[np.dtype(dt).name]


def _wide_unsigned(dt: np.dtype) -> str:
    return "ulong" if dt.itemsize == 8 else "uint"


class Emitter:
    """Writes the C expression of a typed tree; weak nodes take the dtype their context gives."""

    def __init__(self, expr: Expression, types: dict, load: dict):
        self.expr = expr
        self.types = types
        self.load = load  # input name -> C expression of its element (or scalar)

    def emit(self, node, ctx: np.dtype) -> tuple[str, np.dtype]:
        code, r = self._emit(node, ctx)
        if r == np.float16 and not isinstance(node, ast.Name):
            code = f"ISTHMUS_ROUND_HALF({code})"  # NumPy rounds every float16 result; so do we
        return code, r

    def _emit(self, node, ctx: np.dtype) -> tuple[str, np.dtype]:
        t = self.types[id(node)]
        r = t if isinstance(t, np.dtype) else ctx
        c = ctype(r)
        if isinstance(node, ast.Constant):
            return _literal(node.value, r), r
        if isinstance(node, ast.Name):
            return f"(({c}){self.load[node.id]})", r
        if isinstance(node, ast.UnaryOp):
            x = self._as(node.operand, r)
            if isinstance(node.op, ast.UAdd):
                return x, r
            if r.kind == "f":
                return f"(-{x})", r
            return f"(({c})(-({_wide_unsigned(r)}){x}))", r
        if isinstance(node, ast.BinOp):
            return self._binop(node, r, c), r
        return self._call(node, r, c), r

    def _as(self, node, r: np.dtype) -> str:
        code, dt = self.emit(node, r)
        return code if dt == r else f"(({ctype(r)}){code})"

    def _binop(self, node, r, c) -> str:
        op = _BINOPS[type(node.op)][0]
        if op == "**":
            return self._power(node, node.left, node.right, r, c)
        a, b = self._as(node.left, r), self._as(node.right, r)
        if r.kind == "f":
            return f"({a} {op} {b})"
        u = _wide_unsigned(r)  # integers wrap like NumPy's: compute unsigned (no signed-overflow UB)
        return f"(({c})(({u}){a} {op} ({u}){b}))"

    def _power(self, node, base, exponent, r, c) -> str:
        if r.kind == "f":
            return f"pow({self._as(base, r)}, {self._as(exponent, r)})"
        k = exponent.value if isinstance(exponent, ast.Constant) else None
        if not isinstance(k, int) or not 0 <= k <= _MAX_INT_POWER:
            raise self.expr.error(node, f"an integer power needs a constant exponent 0..{_MAX_INT_POWER} "
                                        f"(or make an operand floating-point)")
        if k == 0:
            return f"(({c})1)"
        b = f"({_wide_unsigned(r)}){self._as(base, r)}"
        return f"(({c})({' * '.join([b] * k)}))"

    def _call(self, node, r, c) -> str:
        name = node.func.id
        if name in ("pow",):
            return self._power(node, node.args[0], node.args[1], r, c)
        args = [self._as(a, r) for a in node.args]
        if r.kind == "f":
            a = args[0]
            return {"abs": f"fabs({a})", "round": f"rint({a})", "rsqrt": f"({_literal(1, r)} / sqrt({a}))",
                    "exp10": f"pow({_literal(10, r)}, {a})", "mad": f"fma({', '.join(args)})"}.get(
                name, f"{name}({', '.join(args)})")
        u = _wide_unsigned(r)
        if name in ("abs",):
            return args[0] if r.kind == "u" else f"(({c})({args[0]} < 0 ? -({u}){args[0]} : ({u}){args[0]}))"
        if name in ("floor", "ceil", "trunc", "rint", "round"):
            return args[0]
        if name == "fmin":
            return f"({args[0]} < {args[1]} ? {args[0]} : {args[1]})"
        if name == "fmax":
            return f"({args[0]} > {args[1]} ? {args[0]} : {args[1]})"
        if name == "fmod":  # NumPy: x % 0 is 0 for integers (and C would trap)
            return f"({args[1]} == 0 ? ({c})0 : ({c})({args[0]} % {args[1]}))"
        if name in ("fma", "mad"):
            return f"(({c})(({u}){args[0]} * ({u}){args[1]} + ({u}){args[2]}))"
        raise self.expr.error(node, f"{name}() of integers is not supported")


def _literal(value, r: np.dtype) -> str:
    c = ctype(r)
    if r.kind == "f":
        v = float(value)
        if math.isnan(v):
            return f"(({c})NAN)"
        if math.isinf(v):
            return f"(({c}){'-' if v < 0 else ''}INFINITY)"
        text = repr(v)
        return f"{text}f" if c == "float" else f"(({c}){text})"
    if not float(value).is_integer():
        raise UnsupportedDtypeError(f"constant {value!r} in an integer ({r}) context")
    v = int(value)
    info = np.iinfo(r)
    v = (v - info.min) % (info.max - info.min + 1) + info.min  # wrap like a NumPy cast
    suffix = "UL" if r.kind == "u" and r.itemsize == 8 else ("L" if r.itemsize == 8 else "")
    if v == info.min and r.kind == "i":  # -2^63 has no literal
        return f"(({c})({v + 1}{suffix} - 1))"
    return f"(({c}){v}{suffix})"


# Rounding a float to the nearest float16 and back, on both backends (no cl_khr_fp16 needed).
HALF_ROUNDING = """#ifdef ISTHMUS_CUDA
#define ISTHMUS_ROUND_HALF(x) isthmus_h2f(isthmus_f2h(x))
#else
inline float isthmus_round_half(float x) { ushort h; vstore_half(x, 0, (half*)&h); return vload_half(0, (const half*)&h); }
#define ISTHMUS_ROUND_HALF(x) isthmus_round_half(x)
#endif
"""
