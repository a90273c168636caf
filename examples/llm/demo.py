"""The LLM part of `make demo` (issue 30): write a tiny random Llama model in Hugging Face format,
run the Java chat example (examples/llm, a standalone Maven app on io.isthmus:isthmus) on it
through the launcher on the default device, check every streamed token against the reference,
and print the speed.

The references: Python's isthmus.llm model on the same device (the same kernels: tokens equal),
and the NumPy float64 model of tests/llm where the checkout has it (each token its greedy choice, or
within bf16's logit tolerance of it).

    python examples/llm/demo.py            (after `cd examples/llm && mvn compile`)
"""
from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

import isthmus
from isthmus.llm import GenerationConfig, LlamaModel
from isthmus.llm.testing import write_random_llama

HERE = Path(__file__).resolve().parent
NEW_TOKENS = 24


def java_chat(folder: Path, prompts: list[list[int]]) -> tuple[list[list[int]], list[str]]:
    """The example app's replies (ids) and speed lines for ``prompts``, one stdin line each."""
    stdin = "".join(",".join(map(str, p)) + "\n" for p in prompts) + "\n"
    r = subprocess.run([sys.executable, "-m", "isthmus.java", "-cp", str(HERE / "target" / "classes"),
                        "example.llm.Chat", "--model", str(folder), "--max-new-tokens", str(NEW_TOKENS)],
                       input=stdin, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise SystemExit(f"the Java chat example failed (exit {r.returncode}):\n{r.stderr[-3000:]}")
    lines = [line for line in r.stdout.splitlines() if line.strip()]
    replies = [[int(t) for t in line.split(",")] for line in lines if re.fullmatch(r"\d+(,\d+)*", line)]
    speeds = [line for line in lines if line.startswith("[")]
    return replies, speeds


def numpy_reference(folder: Path):
    """tests/llm's NumPy float64 model of ``folder`` where the checkout has it (None otherwise)."""
    sys.path.insert(0, str(HERE.parents[1] / "tests" / "llm"))
    try:
        from llm_reference import Reference  # noqa: PLC0415 - only in a checkout
    except ImportError:
        return None
    return Reference(folder)


def reference_agrees(ref, prompt: list[int], tokens: list[int], tol: float = 0.15) -> bool:
    """Whether each token is the reference's greedy choice, or within ``tol`` (bf16's logit error) of
    its best logit where the top two are that close, fed back token by token."""
    seq = list(prompt)
    for t in tokens:
        logits = ref.logits(seq)[-1]
        if logits[t] < logits.max() - tol:
            return False
        seq.append(t)
    return True


def main() -> int:
    dev = isthmus.device()
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory(prefix="isthmus-llm-demo-") as tmp:
        folder = write_random_llama(Path(tmp) / "tiny-llama", seed=0)
        with LlamaModel.load(folder, dev, max_batch=1) as model:
            vocab = model.config.vocab_size
            prompts = [rng.integers(0, vocab, n).tolist() for n in (7, 19, 2)]
            python = [model.generate([p], GenerationConfig(max_new_tokens=NEW_TOKENS)).tokens[0] for p in prompts]
        replies, speeds = java_chat(folder, prompts)
        ref = numpy_reference(folder)
        print(f"LLM demo: a tiny random Llama ({vocab} tokens, bf16) on {dev.id} ({dev.name}), "
              f"{len(prompts)} prompts streamed from Java (examples/llm)")
        ok = len(replies) == len(prompts)
        for i, (p, java, py) in enumerate(zip(prompts, replies, python)):
            same = java == py
            agrees = ref is None or reference_agrees(ref, p, java)
            ok &= same and agrees
            print(f"  prompt {i} ({len(p)} tokens): {len(java)} tokens from Java, "
                  f"{'equal to' if same else 'DIFFERENT from'} Python's isthmus.llm"
                  + ("" if ref is None else f", {'agreeing with' if agrees else 'NOT agreeing with'} the NumPy "
                     "float64 reference") + f"  {speeds[i] if i < len(speeds) else ''}")
        if ref is None:
            print("  (no NumPy reference here: tests/llm is part of the checkout only)")
    if not ok:
        print("LLM demo FAILED: Java's tokens differ from the reference")
        return 1
    print("LLM demo OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
