"""Java's Tuner with a variant flag tunes the kernel that the op's call with that flag launches:
Tuner.of("gemm").dtype(BFLOAT16).flag("trans_b", true) stores what gemm(x, w, trans_b=True) on
bfloat16 then runs (seen by a recording Recorder at the launch)."""
from __future__ import annotations

import numpy as np

import isthmus
from isthmus.record import recording


def test_java_tuner_flag_reaches_the_transposed_launch(jvm, J, dev, tuning_db, rng):
    import ml_dtypes

    jdev = J.Isthmus.get().device(dev.id)
    r = (J.Tuner.of("gemm").device(jdev).dtype(J.DType.BFLOAT16).flag("trans_b", True).size("m", 33)
         .size("n", 40).size("k", 24).strategy(J.Strategy.RANDOM).budget(2).seed(3).run())
    best = {str(k): int(v) for k, v in dict(r.best()).items()}
    assert str(r.kernel()) == "gemm_mma"
    x = dev.asarray(rng.standard_normal((30, 24)).astype(ml_dtypes.bfloat16))
    w = dev.asarray(rng.standard_normal((40, 24)).astype(ml_dtypes.bfloat16))  # same bucket, stored N x K
    with recording(dev) as rec:
        isthmus.ops.gemm(x, w, trans_b=True)
    (kernel, *_), = rec.launches
    defines = kernel.program.defines
    assert kernel.name == "gemm_mma" and defines["TRANS_B"] == 1 and defines["TRANS_A"] == 0
    assert {k: defines[k] for k in best} == best
    # Tuner.config for gemm on bfloat16 answers with the family that runs it (the tensor-core one)
    sizes = jvm.JClass("java.util.Map").of("m", jvm.JLong(33), "n", jvm.JLong(40), "k", jvm.JLong(24))
    plain = {str(k) for k in dict(J.Tuner.config("gemm", jdev, sizes, J.DType.BFLOAT16))}
    assert plain == set(best)
