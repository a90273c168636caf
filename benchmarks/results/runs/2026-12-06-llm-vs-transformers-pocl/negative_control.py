# (python benchmarks/results/runs/2026-12-06-llm-vs-transformers-pocl/negative_control.py, with torch and transformers)
# negative control: the same comparison with the reference's config changed (llama3 rope scaling dropped): must fail
import json, sys, tempfile
from pathlib import Path
import numpy as np, torch, isthmus
sys.path.insert(0, str(Path(__file__).resolve().parents[4] / "tests" / "llm"))  # the repository's tests/llm
from gpu_check_llm import LLAMA3, REL_TOL
from isthmus.llm import GenerationConfig, LlamaModel
from isthmus.llm.testing import write_random_llama
from transformers import AutoModelForCausalLM
f = write_random_llama(Path(tempfile.mkdtemp()) / "negctl", dtype="float32", vocab_size=1000, hidden_size=256, intermediate_size=688, num_hidden_layers=3,
                       num_attention_heads=8, num_key_value_heads=2, rope_scaling=LLAMA3, rope_theta=500000.0, seed=11)
p = np.random.default_rng(0).integers(0, 1000, 120).tolist()
with LlamaModel.load(f, isthmus.device("opencl:0"), max_batch=1, max_context=256) as m:
    r = m.generate([p], GenerationConfig(max_new_tokens=4), return_logits=True)
c = json.loads((f / "config.json").read_text()); c["rope_scaling"] = None; (f / "config.json").write_text(json.dumps(c))
ref = AutoModelForCausalLM.from_pretrained(str(f), dtype=torch.float32).eval()
with torch.no_grad():
    logits = ref(torch.tensor([p])).logits[0].double().numpy()
tol = REL_TOL["float32"] * np.abs(logits).max()
print("negative control (reference without llama3 scaling): err/tol =", float(np.abs(r.last_logits[0] - logits[len(p) - 1]).max() / tol))
