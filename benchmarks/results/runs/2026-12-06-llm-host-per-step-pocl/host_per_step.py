"""Host microseconds per decode step of isthmus.llm (Session.stats' host_seconds over host_steps: step()'s
own time less its waits for the tokens), a tiny random bf16 Llama at batch 1, 255 decode steps, three runs:
python benchmarks/results/runs/2026-12-06-llm-host-per-step-pocl/host_per_step.py [DEVICE]"""
import sys
import tempfile

import isthmus
from isthmus.llm import GenerationConfig, LlamaModel
from isthmus.llm.testing import write_random_llama

f = write_random_llama(tempfile.mkdtemp() + "/tiny", dtype="bfloat16")
dev = isthmus.device(sys.argv[1] if len(sys.argv) > 1 else "opencl:0")
print(f"{dev.id} {dev.name} [{dev.platform}]")
with LlamaModel.load(f, dev, max_batch=1, max_context=300) as m:
    m.generate([[1, 2, 3]], GenerationConfig(max_new_tokens=4))  # the step's graph captured
    for _ in range(3):
        st = m.generate([list(range(16))], GenerationConfig(max_new_tokens=256)).stats
        steps = st["host_steps"]
        print(f"host us/step {st['host_seconds'] / steps * 1e6:.1f}  wall us/step {st['decode_seconds'] / steps * 1e6:.1f}  "
              f"steps {steps}")
