"""isthmus.llm: Llama-family models (Hugging Face checkpoints) generating on isthmus kernels.

>>> from isthmus.llm import LlamaModel, GenerationConfig
>>> with LlamaModel.load("Llama-3.2-1B/", isthmus.device(), max_batch=8) as model:
...     r = model.generate([[128000, 791, 6864, 315]], GenerationConfig(max_new_tokens=16))
...     r.tokens, r.decode_tokens_per_s

The names here are the contract that Java's io.isthmus.llm calls (see the Runtime SPI).
"""
from .config import LlamaConfig
from .generation import GenerationConfig, GenerationResult
from .model import LlamaModel
from .session import Session
from .tokenizer import Tokenizer

__all__ = ["LlamaConfig", "LlamaModel", "GenerationConfig", "GenerationResult", "Session", "Tokenizer"]
