"""Llama generation from Java (io.isthmus.llm through the hosted JVM) next to PyTorch on the same
weights, against the memory roofline (issue 30, item 7).

    python -m benchmarks llama [--device ID] [--out DIR] [--quick] [--shapes 1b,8b] [--dir /tmp]
                               [--contexts 512,4096] [--batches 1,8,32] [--peers graph,eager,hf,compile]
                               [--budget SECONDS] [--tag T] [--run QUESTION]

For each shape (``1b``: Llama-3.2-1B's, ``8b``: Llama-3.1-8B's, ``tiny``: the smoke run's) a folder of
random bf16 weights in Hugging Face format is written under --dir (kept for the next run) with
``isthmus.llm.testing.write_random_llama``, and measured in this order, each part skipped (and said
so) once the --budget of seconds is spent:

- loading it from Java (``LlamaModel.load``): seconds, GB/s next to the pinned host-to-device copy
  bandwidth, and the process's peak host memory growth while loading (anonymous memory, i.e. beyond
  the mapped file's pages, sampled from /proc/self/status every 5 ms);
- prefill of a 2048-token prompt from Java (the runtime's clock: the prefill and its first token);
- decode at batch 1, 8, 32 and context 512, 4096 from Java: greedy, prompts of the context's length,
  the steady state of the Java wall clock (each step's token reaching a Java listener, the first two
  steps left out: the prefill's token and the graph's capture), and the runtime's own clock;
- PyTorch on the same folder (transformers' ``LlamaForCausalLM``, bf16, SDPA): a minimal Llama on its
  weights (benchmarks/_torch_llama.py) eager, as one CUDA graph per step, through
  ``torch.compile(mode="reduce-overhead")`` (batch 1, context 512; where the budget allows), its
  prefill (SDPA + cuBLAS), and ``generate`` with a static cache (batch 1);
- the roofline: (weight bytes + KV bytes read per step) / the measured device copy bandwidth;
- host microseconds per decode step: a tiny model at batch 1 (the device's part is negligible), the
  Java wall clock per step next to Python's loop over the same session steps.
"""
from __future__ import annotations

import argparse
import os
import threading
import time
from pathlib import Path

import numpy as np

from benchmarks import _results
from isthmus import measure

SMOKE = ["--quick", "--shapes", "tiny", "--out", "{out}"]

TEST_CLASSES = Path(__file__).resolve().parents[1] / "target" / "test-classes"
TINY = dict(vocab_size=517, hidden_size=72, intermediate_size=200, num_hidden_layers=2, num_attention_heads=3,
            num_key_value_heads=1, max_position_embeddings=2048)
# per shape: prompt length of the prefill, contexts, batches, decode steps (quick, full)
PLAN = {"tiny": (64, (16, 48), (1, 4), (6, 12)),
        "1b": (2048, (512, 4096), (1, 8, 32), (32, 128)),
        "8b": (2048, (512, 4096), (1, 8, 32), (32, 128))}


def presets() -> dict:
    from isthmus.llm import testing

    return {"tiny": TINY, "1b": testing.LLAMA_3_2_1B, "8b": testing.LLAMA_3_1_8B}


class Clock:
    """The run's budget: what is skipped for want of time is recorded, not silently dropped."""

    def __init__(self, seconds: float):
        self.deadline = time.monotonic() + seconds
        self.skipped: list[str] = []

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def allows(self, seconds: float, what: str) -> bool:
        if self.left() >= seconds:
            return True
        self.skipped.append(f"{what} (needs ~{seconds:.0f} s, {max(self.left(), 0):.0f} s left)")
        print(f"skipped: {self.skipped[-1]}", flush=True)
        return False


def model_folder(shape: str, root: Path) -> tuple[Path, float]:
    """The shape's folder of random bf16 weights (written once: a marker names the finished write)."""
    from isthmus.llm.testing import write_random_llama

    folder = root / f"isthmus-llama-{shape}-bf16"
    done = folder / ".complete"
    if done.exists():
        return folder, 0.0
    t0 = time.perf_counter()
    if _torch_cuda():  # the random numbers drawn on the GPU: seconds for the 8B shapes' 16 GB
        from benchmarks._torch_llama import write_random_llama_fast

        write_random_llama_fast(folder, presets()[shape])
    else:
        write_random_llama(folder, dtype="bfloat16", seed=0, **presets()[shape])
    done.write_text("written by benchmarks/llama.py\n")
    return folder, time.perf_counter() - t0


def _torch_cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def folder_bytes(folder: Path) -> int:
    return sum(f.stat().st_size for f in folder.glob("*.safetensors"))


class MemorySampler:
    """Peak growth of this process's resident memory (anonymous and file-backed, from
    /proc/self/status) while running, sampled every 5 ms."""

    FIELDS = ("RssAnon", "RssFile")

    def __init__(self):
        self.start = self._read()
        self.peak = dict(self.start)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @classmethod
    def _read(cls) -> dict:
        out = dict.fromkeys(cls.FIELDS, 0)
        try:
            for line in Path("/proc/self/status").read_text().splitlines():
                key, _, value = line.partition(":")
                if key in out:
                    out[key] = int(value.split()[0]) * 1024
        except OSError:
            pass
        return out

    def _run(self):
        while not self._stop.wait(0.005):
            for k, v in self._read().items():
                self.peak[k] = max(self.peak[k], v)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        for k, v in self._read().items():
            self.peak[k] = max(self.peak[k], v)

    def growth(self, field: str) -> int:
        return self.peak[field] - self.start[field]


class Java:
    """The Java side: io.isthmus.llm through the hosted JVM (the bench class LlamaBench times steps
    in Java where target/test-classes has it)."""

    def __init__(self, device_id: str):
        import isthmus.java

        has_bench = (TEST_CLASSES / "io" / "isthmus" / "bench" / "LlamaBench.class").exists()
        isthmus.java.start(classpath=[str(TEST_CLASSES)] if has_bench else [])
        import jpype

        self.jpype = jpype
        self.llm = jpype.JPackage("io.isthmus.llm")
        self.bench = jpype.JClass("io.isthmus.bench.LlamaBench") if has_bench else None
        self.device = jpype.JClass("io.isthmus.Isthmus").get().device(device_id)

    def load(self, folder: Path, max_batch: int, max_context: int):
        opts = self.llm.LlamaOptions.defaults().withMaxBatch(max_batch).withMaxContext(max_context)
        return self.llm.LlamaModel.load(self.jpype.JClass("java.nio.file.Path").of(str(folder), []), self.device, opts)

    def prompts(self, rng, vocab: int, batch: int, length: int):
        out = self.jpype.JClass("java.util.ArrayList")()
        for _ in range(batch):
            out.add(self.jpype.JArray(self.jpype.JInt)(rng.integers(0, vocab, length).astype(np.int32)))
        return out

    def config(self, steps: int):
        return self.llm.GenerationConfig.builder().maxNewTokens(steps).build()

    def prefill(self, model, rng, vocab: int, length: int) -> float:
        """Prompt tokens/s of one prompt of ``length`` (the runtime's clock), the best of two."""
        return max(float(model.generate(self.prompts(rng, vocab, 1, length), self.config(1)).promptTokensPerSecond())
                   for _ in range(2))

    def decode(self, model, rng, vocab: int, batch: int, context: int, steps: int) -> dict:
        prompts, cfg = self.prompts(rng, vocab, batch, context), self.config(steps)
        if self.bench is None:
            r = model.generate(prompts, cfg)
            wall = float(r.stepSeconds())
            return {"java tok/s": batch * max(int(r.steps()) - 1, 1) / wall if wall > 0 else None,
                    "runtime tok/s": float(r.decodeTokensPerSecond()), "java ms/step": 1e3 * wall / int(r.steps())}
        times = np.asarray(self.bench.stepTimes(model, prompts, cfg), dtype=np.int64)
        stamps = times[:steps].astype(np.float64)
        runtime_rate = float(np.asarray([times[steps + 1]], np.int64).view(np.float64)[0])
        skip = min(2, steps - 2)
        per_step = (stamps[-1] - stamps[skip]) / max(steps - 1 - skip, 1) / 1e9
        return {"java tok/s": batch / per_step, "runtime tok/s": runtime_rate, "java ms/step": per_step * 1e3}


def host_overhead(java, dev, root: Path, steps: int) -> dict:
    """Microseconds per decode step of a tiny model at batch 1, from Java and from Python's loop over
    the same steps: the device's part is small, so this is the host's (Java's crossing included).
    Also the calling thread's CPU time per step of Python's loop: the host's own work, an upper
    bound of it where the driver spins while it waits for the step's token (CUDA's default); and
    step()'s own time less its waits for the tokens (Session.stats' host_seconds): the host's work
    per step whatever the device takes."""
    from isthmus.llm import GenerationConfig, LlamaModel

    folder, _ = model_folder("tiny", root)
    rng = np.random.default_rng(1)
    prompt = rng.integers(0, TINY["vocab_size"], 16).tolist()
    with LlamaModel.load(folder, dev, max_batch=1, max_context=steps + 32) as m:
        m.generate([prompt], GenerationConfig(max_new_tokens=4))
        best = cpu = own = float("inf")
        for _ in range(3):
            s = m.start([prompt], GenerationConfig(max_new_tokens=steps))
            s.step()
            s.step()  # the prefill's token, the graph's capture
            t0, c0, st0 = time.perf_counter(), time.thread_time(), s.stats()
            n = 0
            while s.step():
                n += 1
            best = min(best, (time.perf_counter() - t0) / max(n, 1))
            cpu = min(cpu, (time.thread_time() - c0) / max(n, 1))
            st = s.stats()  # step()'s own work, less the waits for the tokens (Session.stats)
            own = min(own, (st["host_seconds"] - st0["host_seconds"]) / max(st["host_steps"] - st0["host_steps"], 1))
            s.close()
    model = java.load(folder, 1, steps + 32)
    try:
        java.decode(model, rng, TINY["vocab_size"], 1, 16, 4)
        runs = [java.decode(model, rng, TINY["vocab_size"], 1, 16, steps)["java ms/step"] for _ in range(3)]
    finally:
        model.close()
    return {"java us/step": min(runs) * 1e3, "python us/step": best * 1e6,
            "java crossing us/step": min(runs) * 1e3 - best * 1e6, "python thread CPU us/step": cpu * 1e6,
            "python host us/step": own * 1e6, "steps": steps}


def roofline(cfg: dict, batch: int, context: int, bandwidth: float) -> tuple[float, int]:
    """(tokens/s, bytes per step): every weight read once per step (a tied head once), plus the KV
    cache of each sequence up to ``context``, over ``bandwidth`` bytes/s."""
    h, i, v, n = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"], cfg["num_hidden_layers"]
    d = cfg.get("head_dim") or h // cfg["num_attention_heads"]
    q, kv = cfg["num_attention_heads"] * d, cfg["num_key_value_heads"] * d
    # layers, final norm, LM head (tied or not: the embedding is a gather of a few rows, not a read)
    weights = 2 * (n * (h * (q + 2 * kv) + q * h + 3 * h * i + 2 * h) + h + v * h)
    kv_bytes = batch * context * n * 2 * kv * 2
    step = weights + kv_bytes
    return batch * bandwidth / step, step


def copy_bandwidth(dev) -> tuple[float, str]:
    """Bytes/s (read + written) of a large device copy: torch's on CUDA, NumPy's where device memory
    is host memory (PoCL)."""
    if dev.backend == "cuda" or dev.kind == "gpu":
        try:
            from benchmarks._torch_llama import copy_bandwidth as torch_copy

            return torch_copy("cuda"), "torch copy_ 1 GiB"
        except ImportError:
            pass
    a = np.ones(1 << 26, np.float32)
    b = np.empty_like(a)
    t0 = time.perf_counter()
    for _ in range(5):
        np.copyto(b, a)
    return 2 * a.nbytes * 5 / (time.perf_counter() - t0), "NumPy copy 256 MiB (host memory)"


def torch_peers(folder: Path, cfg: dict, plan, rows: dict, clock: Clock, quick: bool, notes: list[str],
                peers: set[str], save) -> None:
    try:
        import torch

        from benchmarks import _torch_llama as T
    except ImportError as exc:
        notes.append(f"no PyTorch rows: {exc}")
        print(notes[-1])
        return
    if not torch.cuda.is_available():
        notes.append("no PyTorch rows: CUDA is not available to torch here")
        print(notes[-1])
        return
    prompt_len, contexts, batches, steps = plan
    if not clock.allows(20, f"PyTorch peers (loading {folder.name})"):
        return
    hf = T.load_hf(folder)
    tl = T.TorchLlama(hf)
    prompt = torch.randint(0, cfg["vocab_size"], (1, prompt_len), device=tl.device)
    rows[("prefill", 1, prompt_len)]["torch tok/s"] = prompt_len / tl.prefill_seconds(prompt)
    def attempt(what: str, seconds: float, fn):
        if not clock.allows(seconds, what):
            return None
        try:
            return fn()
        except Exception as exc:  # noqa: BLE001 - a peer failing (memory, capture) is a note, not the end
            notes.append(f"{what} failed: {type(exc).__name__}: {str(exc).splitlines()[0][:300]}")
            print(notes[-1], flush=True)
            return None
        finally:
            torch.cuda.empty_cache()
            save()

    for context in contexts:
        for batch in batches:
            row = rows[("decode", batch, context)]
            if "graph" in peers:
                row["torch graph tok/s"] = attempt(f"torch graph b{batch} c{context}", 4,
                                                   lambda: tl.decode_graph(batch, context, steps))
            if "eager" in peers:
                row["torch eager tok/s"] = attempt(f"torch eager b{batch} c{context}", 8,
                                                   lambda: tl.decode_eager(batch, context, max(8, steps // 4)))
    first = rows[("decode", batches[0], contexts[0])]
    if "hf" in peers:
        first["HF generate tok/s"] = attempt(f"HF generate (static cache) b{batches[0]}", 40, lambda: T.hf_generate_decode(
            hf, batches[0], contexts[0], max(8, steps // 2)))
    compiled = None
    if "compile" in peers:
        compiled = attempt(f"torch.compile(reduce-overhead) b{batches[0]}", 90 if quick else 60,
                           lambda: tl.decode_compiled(batches[0], contexts[0], steps))
    if compiled:
        first["torch compile tok/s"] = compiled[0]
        notes.append(f"torch.compile(mode='reduce-overhead') took {compiled[1]:.1f} s to compile and warm up")
    del tl, hf
    torch.cuda.empty_cache()


def bench_shape(shape: str, java, dev, args, clock: Clock, bandwidth: float, h2d: float | None, notes: list,
                save) -> dict:
    """Measure ``shape``; ``save(result)`` is called after each part (a run cut short keeps what it measured)."""
    cfg = presets()[shape]
    prompt_len, contexts, batches, (quick_steps, full_steps) = PLAN[shape]
    if args.contexts:
        contexts = tuple(int(c) for c in args.contexts.split(","))
    if args.batches:
        batches = tuple(int(b) for b in args.batches.split(","))
    steps = quick_steps if args.quick else full_steps
    root = Path(args.dir)
    if not (root / f"isthmus-llama-{shape}-bf16" / ".complete").exists():
        gb = roofline(cfg, 1, 0, 1.0)[1] / 1e9
        if not clock.allows(gb / (2.0 if _torch_cuda() else 0.6) + 25, f"{shape}: writing its folder ({gb:.1f} GB) "
                            "and measuring it"):
            save({"rows": [], "load": {"shape": shape}, "steps": steps})
            return None
    folder, wrote = model_folder(shape, root)
    size = folder_bytes(folder)
    print(f"{shape}: {folder} ({size / 1e9:.2f} GB{f', written in {wrote:.1f} s' if wrote else ''})", flush=True)
    rows = {("prefill", 1, prompt_len): {}}
    for context in contexts:
        for batch in batches:
            rows[("decode", batch, context)] = {}
    vocab = cfg["vocab_size"]
    rng = np.random.default_rng(0)
    max_context = max(max(contexts) + steps, prompt_len) + 16
    with MemorySampler() as mem:
        t0 = time.perf_counter()
        model = java.load(folder, max(batches), max_context)
        load_s = time.perf_counter() - t0
    load = {"shape": shape, "file GB": size / 1e9, "seconds": load_s, "GB/s": size / load_s / 1e9,
            "H2D GB/s": h2d / 1e9 if h2d else None, "anon growth GB": mem.growth("RssAnon") / 1e9,
            "file-backed growth GB": mem.growth("RssFile") / 1e9}
    print(f"{shape}: loaded from Java in {load_s:.1f} s", flush=True)

    def result() -> dict:
        return {"rows": _rows(shape, cfg, rows, bandwidth), "load": load, "steps": steps}

    save(result())
    try:
        rate = java.prefill(model, rng, vocab, prompt_len)
        rows[("prefill", 1, prompt_len)]["java tok/s"] = rate
        print(f"{shape}: prefill {prompt_len}: {rate:.0f} tokens/s", flush=True)
        for context in contexts:
            for batch in batches:
                est = batch * context / max(rate, 1.0) + steps * 0.05 + 2
                if not clock.allows(est, f"Java decode b{batch} c{context} ({shape})"):
                    continue
                try:
                    r = java.decode(model, rng, vocab, batch, context, steps)
                except Exception as exc:  # noqa: BLE001 - one configuration failing (memory) must not end the run
                    notes.append(f"{shape} Java decode b{batch} c{context} failed: {str(exc).splitlines()[0][:300]}")
                    print(notes[-1], flush=True)
                    continue
                rows[("decode", batch, context)].update(r)
                print(f"{shape}: decode b{batch} c{context}: {r['java tok/s']:.0f} tokens/s from Java", flush=True)
                save(result())
    finally:
        model.close()
        dev.free_pool()  # the peers' turn for the device memory
    peers = {x.strip() for x in args.peers.split(",")} - {"none", ""}
    if peers:
        torch_peers(folder, cfg, (prompt_len, contexts, batches, steps), rows, clock, args.quick, notes, peers,
                    lambda: save(result()))
    save(result())
    return result()


def _rows(shape: str, cfg: dict, rows: dict, bandwidth: float) -> list[dict]:
    """The table's rows: the measurements, the roofline, the ratios."""
    table = []
    for (what, batch, context), r in rows.items():
        row = {"shape": shape, "what": what, "batch": batch, "context": context, **r}
        if what == "decode":
            roof, step_bytes = roofline(cfg, batch, context, bandwidth)
            row["roofline tok/s"], row["MB/step"] = roof, step_bytes / 1e6
            if r.get("java tok/s"):
                row["java % roofline"] = 100 * r["java tok/s"] / roof
        peers = [r.get(k) for k in ("torch tok/s", "torch eager tok/s", "torch graph tok/s", "torch compile tok/s",
                                    "HF generate tok/s") if r.get(k)]
        if peers and r.get("java tok/s"):
            row["java / best torch"] = r["java tok/s"] / max(peers)
        table.append(row)
    return table


COLUMNS = ["shape", "what", "batch", "context", "java tok/s", "runtime tok/s", "torch tok/s", "torch eager tok/s",
           "torch graph tok/s", "torch compile tok/s", "HF generate tok/s", "java / best torch", "roofline tok/s",
           "java % roofline", "java ms/step", "MB/step"]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="fewer decode steps; torch.compile only if the budget allows")
    p.add_argument("--device", default=None, help="device id (default: ISTHMUS_DEVICE or the best)")
    p.add_argument("--shapes", default="1b,8b", help="comma-separated: tiny, 1b, 8b")
    p.add_argument("--contexts", default=None, help="decode contexts, comma-separated (default: 512,4096)")
    p.add_argument("--batches", default=None, help="decode batch sizes, comma-separated (default: 1,8,32)")
    p.add_argument("--peers", default="graph,eager,hf,compile",
                   help="PyTorch peers, comma-separated: graph, eager, hf (generate), compile; 'none' for none")
    p.add_argument("--dir", default=os.environ.get("TMPDIR", "/tmp"), help="where the model folders are written")
    p.add_argument("--no-host", action="store_true", help="leave out the host microseconds per step (tiny model)")
    p.add_argument("--budget", type=float, default=1e9, help="seconds; later parts are skipped (and listed) after it")
    p.add_argument("--out", default=None, help="folder for llama-<backend>-<device>.md/.json")
    p.add_argument("--tag", default="", help="suffix of the result file names")
    _results.add_run_option(p)
    args = p.parse_args(argv)
    shapes = [s.strip() for s in args.shapes.split(",") if s.strip()]
    unknown = [s for s in shapes if s not in PLAN]
    if unknown:
        raise SystemExit(f"--shapes: unknown {unknown}; known: {', '.join(PLAN)}")
    import isthmus

    clock = Clock(args.budget)
    dev = isthmus.device(args.device)
    java = Java(dev.id)
    bandwidth, how = copy_bandwidth(dev)
    h2d = None
    if dev.backend == "cuda":
        try:
            from benchmarks._torch_llama import host_to_device_bandwidth

            h2d = host_to_device_bandwidth()
        except ImportError:
            pass
    notes = [f"copy bandwidth {bandwidth / 1e9:.0f} GB/s ({how}): the roofline's denominator",
             "java tok/s: the Java wall clock's steady state (io.isthmus.bench.LlamaBench: each step's token at a Java "
             "listener, the first two steps left out); runtime tok/s: the runtime's clock (launch of each step to its "
             "tokens on the host); prefill: the runtime's clock for the prompt and its first token"]
    data = {"shapes": {}, "bandwidth": bandwidth, "h2d": h2d}

    def save(shape=None, result=None):
        if shape is not None:
            data["shapes"][shape] = result
        if args.out:  # a run cut short (its time limit) keeps what it measured so far
            _report(dev, java, data, notes + [f"skipped: {s}" for s in clock.skipped]).write(args.out, args.tag)

    for shape in shapes:
        bench_shape(shape, java, dev, args, clock, bandwidth, h2d, notes, lambda r, shape=shape: save(shape, r))
        if not args.no_host and "host" not in data and clock.allows(5, "host microseconds per step (tiny model)"):
            data["host"] = host_overhead(java, dev, Path(args.dir), 64 if args.quick else 256)
            save()
    report = _report(dev, java, data, notes + [f"skipped: {s}" for s in clock.skipped])
    print(report.markdown())
    _results.write(report, args.out, args.tag, args.run)
    return 0


def _report(dev, java, data: dict, notes: list[str]):
    from benchmarks._jvm import java_version

    report = measure.Report("llama", f"Llama generation from Java on {dev.id} ({dev.name})", dev, data=data,
                            extra={"java": java_version(java.jpype)}, notes=notes)
    rows = [r for s in data["shapes"].values() for r in s["rows"]]
    report.add_records(rows, COLUMNS, "tokens/s: prefill = prompt tokens/s; decode = generated tokens/s over the batch")
    loads = [s["load"] for s in data["shapes"].values()]
    report.add_records(loads, ["shape", "file GB", "seconds", "GB/s", "H2D GB/s", "anon growth GB",
                               "file-backed growth GB"], "loading from Java (LlamaModel.load), the file in the page cache")
    if "host" in data:
        report.add_records([data["host"]], ["java us/step", "python us/step", "java crossing us/step",
                                            "python thread CPU us/step", "python host us/step", "steps"],
                           "host time per decode step: a tiny model at batch 1 (wall clock; the calling thread's CPU "
                           "time: the host's own work, an upper bound where the driver spins while it waits; python "
                           "host: step()'s time less its waits for the tokens, Session.stats host_seconds)")
    return report


if __name__ == "__main__":
    raise SystemExit(main())
