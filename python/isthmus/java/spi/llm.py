"""``Runtime.loadLlama`` / ``loadTokenizer``: ``isthmus.llm`` models and tokenizers for
``io.isthmus.llm`` (``LlamaHandle``, ``LlamaSessionHandle``, ``TokenizerHandle``).

A generation crosses once per step: ``step()`` runs the session's step and writes its tokens into
the direct buffer Java handed over at ``start`` (a NumPy view made once), returning only their count.
"""
from __future__ import annotations

import jpype
import numpy as np

from isthmus.errors import ClosedBufferError, InvalidArgumentError

from .buffers import host_view
from .proxy import implements

# config.json fields Java reads (LlamaConfig.from), under their Hugging Face names
_CONFIG_FIELDS = ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                  "num_key_value_heads", "head_dim", "max_position_embeddings", "rope_theta", "rms_norm_eps",
                  "tie_word_embeddings", "bos_token_id", "eos_token_id", "torch_dtype")


def load_model(folder, device, joptions):
    from isthmus.llm import LlamaModel

    kwargs = _options(joptions)
    return LlamaHandle(LlamaModel.load(str(folder), device, **kwargs), kwargs)


def load_tokenizer(folder):
    from isthmus.llm import Tokenizer

    return TokenizerHandle(Tokenizer.from_folder(str(folder)))


def _options(jmap) -> dict:
    """A Java ``Map<String, Object>`` of keyword arguments: numbers, strings, booleans, int arrays."""
    out = {}
    if jmap is None:
        return out
    for e in jmap.entrySet():
        v = e.getValue()
        if isinstance(v, jpype.JArray):
            v = [int(x) for x in v]
        elif isinstance(v, jpype.JClass("java.lang.Boolean")):
            v = bool(v)
        elif isinstance(v, jpype.JClass("java.lang.String")):
            v = str(v)
        elif isinstance(v, int):  # java.lang.Long/Integer
            v = int(v)
        elif isinstance(v, float):  # java.lang.Double
            v = float(v)
        out[str(e.getKey())] = v
    return out


def _java_value(v):
    if isinstance(v, bool):
        return jpype.JBoolean(v)
    if isinstance(v, (int, np.integer)):
        return jpype.JLong(int(v))
    if isinstance(v, (float, np.floating)):
        return jpype.JDouble(float(v))
    if isinstance(v, (list, tuple)):
        return jpype.JArray(jpype.JLong)([int(x) for x in v])
    return None if v is None else jpype.JString(str(v))


@implements("io.isthmus.spi.LlamaHandle")
class LlamaHandle:
    """An ``isthmus.llm.LlamaModel`` seen from Java."""

    def __init__(self, model, options: dict):
        self.model = model
        self.options = options

    def _live(self):
        if self.model is None:
            raise ClosedBufferError("this LlamaModel was closed; load it again")
        return self.model

    def config(self):
        model = self._live()
        c = model.config
        out = jpype.JClass("java.util.HashMap")()
        for name in _CONFIG_FIELDS:
            v = getattr(c, name, None)
            if v is not None:
                out.put(name, _java_value(v))
        dtype = getattr(model, "dtype", None) or getattr(c, "torch_dtype", "")
        limits = {"dtype": str(getattr(dtype, "name", dtype)),
                  "max_batch": getattr(model, "max_batch", self.options.get("max_batch")),
                  "max_context": getattr(model, "max_context", self.options.get("max_context"))}
        for name, v in limits.items():
            if v is not None:
                out.put(name, _java_value(v))
        return out

    def start(self, jprompts, jconfig, return_logits, tokens):
        from isthmus.llm import GenerationConfig

        model = self._live()
        prompts = [np.asarray(jprompts[i], dtype=np.int64).tolist() for i in range(len(jprompts))]
        view = host_view(tokens, np.int32, (len(prompts),), writable=True)
        session = model.start(prompts, GenerationConfig(**_options(jconfig)), return_logits=bool(return_logits))
        return LlamaSessionHandle(session, view)

    def close(self):
        model, self.model = self.model, None
        if model is not None:
            model.close()


@implements("io.isthmus.spi.LlamaSessionHandle")
class LlamaSessionHandle:
    """A running generation: one crossing per step, its tokens written into Java's direct buffer."""

    def __init__(self, session, view: np.ndarray):
        self.session = session
        self.view = view

    def step(self):
        tokens = self.session.step()
        n = len(tokens)
        if n:
            self.view[:n] = tokens
        return n

    def lastLogits(self):
        logits = np.ascontiguousarray(self.session.last_logits(), dtype=np.float32).reshape(-1)
        return jpype.JArray(jpype.JFloat)(logits)  # one bulk copy

    def stats(self):
        out = jpype.JClass("java.util.HashMap")()
        for name, v in dict(self.session.stats()).items():
            if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool):
                out.put(str(name), jpype.JDouble(float(v)))
        return out

    def close(self):
        session, self.session = self.session, None
        if session is not None:
            session.close()


@implements("io.isthmus.spi.TokenizerHandle")
class TokenizerHandle:
    """An ``isthmus.llm.Tokenizer`` seen from Java."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer

    def encode(self, text, add_special_tokens):
        ids = self.tokenizer.encode(str(text), add_special_tokens=bool(add_special_tokens))
        return jpype.JArray(jpype.JInt)(np.asarray(ids, dtype=np.int32))

    def decode(self, jids, skip_special_tokens):
        ids = np.asarray(jids, dtype=np.int64).tolist()
        try:
            return str(self.tokenizer.decode(ids, skip_special_tokens=bool(skip_special_tokens)))
        except TypeError:  # a decode without the keyword
            if skip_special_tokens:
                raise InvalidArgumentError("this tokenizer cannot leave special tokens out") from None
            return str(self.tokenizer.decode(ids))

    def stopTokens(self):
        return jpype.JArray(jpype.JInt)([int(t) for t in self.tokenizer.stop_tokens()])

    def applyChatTemplate(self, jroles, jcontents, add_generation_prompt, tokenize):
        roles = [None if r is None else str(r) for r in jroles]
        contents = [None if c is None else str(c) for c in jcontents]
        if len(roles) != len(contents):
            raise InvalidArgumentError(f"applyChatTemplate: {len(roles)} roles but {len(contents)} contents")
        messages = [{"role": r, "content": c} for r, c in zip(roles, contents)]
        out = self.tokenizer.apply_chat_template(messages, add_generation_prompt=bool(add_generation_prompt),
                                                 tokenize=bool(tokenize))
        if tokenize:
            return jpype.JArray(jpype.JInt)(np.asarray(out, dtype=np.int32))
        return str(out)
