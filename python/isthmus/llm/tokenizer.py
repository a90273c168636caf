"""Tokenizer: a model folder's ``tokenizer.json`` through the ``tokenizers`` package (the optional
extra ``isthmus[llm]``), with the special tokens ``tokenizer_config.json`` names."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal, overload

from ..errors import FormatError, InvalidArgumentError

_SPECIAL = ("bos_token", "eos_token", "unk_token", "pad_token", "sep_token", "cls_token", "mask_token")


def _token_text(v):
    """A special token as tokenizer_config.json writes it: a string or an AddedToken object."""
    if isinstance(v, dict):
        v = v.get("content")
    return v if isinstance(v, str) else None


class Tokenizer:
    """Text to token ids and back, as Hugging Face's tokenizer of the model does it.

    >>> tok = Tokenizer.from_folder("Llama-3.2-1B/")
    >>> ids = tok.encode("Hello")            # with the BOS token the model's post-processor adds
    >>> tok.decode(ids, skip_special_tokens=True)
    'Hello'
    """

    def __init__(self, tokenizer, config: dict | None = None):
        self._tok = tokenizer
        self.config = dict(config or {})
        self.special_tokens: dict[str, str] = {}
        for name in _SPECIAL:
            text = _token_text(self.config.get(name))
            if text is not None:
                self.special_tokens[name] = text
        self.chat_template = self.config.get("chat_template")  # a Jinja template when given
        if isinstance(self.chat_template, list):  # the named-templates form: [{"name": ..., "template": ...}]
            named = {t.get("name"): t.get("template") for t in self.chat_template if isinstance(t, dict)}
            self.chat_template = named.get("default")
        self._compiled_template = None

    @classmethod
    def from_folder(cls, path) -> "Tokenizer":
        """The tokenizer of a model folder (its tokenizer.json, and tokenizer_config.json if there)."""
        try:
            from tokenizers import Tokenizer as _HF
        except ImportError:
            raise InvalidArgumentError("isthmus.llm.Tokenizer needs the `tokenizers` package: "
                                       "pip install isthmus[llm]") from None
        p = Path(path)
        f = p / "tokenizer.json" if p.is_dir() else p
        if not f.is_file():
            raise FormatError(f"no tokenizer.json in {p}; pass token ids instead of text, or add the model's "
                              f"tokenizer.json")
        try:
            tok = _HF.from_file(str(f))
        except Exception as exc:
            raise FormatError(f"{f} is not a tokenizer the `tokenizers` package reads: {exc}") from None
        config = None
        cf = f.with_name("tokenizer_config.json")
        if cf.is_file():
            try:
                config = json.loads(cf.read_text(encoding="utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                raise FormatError(f"{cf} is not valid JSON: {exc}") from None
            if not isinstance(config, dict):
                raise FormatError(f"{cf} must hold a JSON object")
        # special tokens that tokenizer_config.json declares and tokenizer.json lacks (chat-template
        # markers): added, so that text holding them encodes to their ids
        added = (config or {}).get("added_tokens_decoder")
        if isinstance(added, dict):
            from tokenizers import AddedToken

            missing = [t for t in (v.get("content") for v in added.values() if isinstance(v, dict) and v.get("special"))
                       if isinstance(t, str) and tok.token_to_id(t) is None]
            if missing:
                tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in missing])
        return cls(tok, config)

    # ---- ids ----------------------------------------------------------------------------------
    def token_id(self, text: str) -> int | None:
        """The id of a token's text (a special token such as "<|eot_id|>"), or None."""
        return self._tok.token_to_id(text)

    @property
    def bos_token_id(self) -> int | None:
        t = self.special_tokens.get("bos_token")
        return None if t is None else self.token_id(t)

    @property
    def eos_token_id(self) -> int | None:
        t = self.special_tokens.get("eos_token")
        return None if t is None else self.token_id(t)

    @property
    def vocab_size(self) -> int:
        return self._tok.get_vocab_size(with_added_tokens=True)

    # ---- text ---------------------------------------------------------------------------------
    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        """The token ids of ``text``. ``add_special_tokens``: the tokenizer's post-processor adds the
        model's (BOS); where the tokenizer has none but tokenizer_config.json says add_bos_token, the
        BOS is put first here. Special tokens written in the text (chat-template markers such as
        "<|start_header_id|>") are encoded as themselves."""
        if not isinstance(text, str):
            raise InvalidArgumentError(f"Tokenizer.encode: text must be a str, got {type(text).__name__}")
        ids = list(self._tok.encode(text, add_special_tokens=add_special_tokens).ids)
        bos = self.bos_token_id
        if add_special_tokens and self.config.get("add_bos_token") and bos is not None and ids[:1] != [bos]:
            ids.insert(0, bos)
        return ids

    def decode(self, ids, skip_special_tokens: bool = False) -> str:
        """The text of token ids (-1, a finished sequence's filler, is left out)."""
        try:
            clean = [int(i) for i in ids if int(i) >= 0]
        except (TypeError, ValueError):
            raise InvalidArgumentError(f"Tokenizer.decode: ids must be integers, got {ids!r:.80}") from None
        return self._tok.decode(clean, skip_special_tokens=skip_special_tokens)

    def stop_tokens(self) -> tuple[int, ...]:
        """Ids that end a generation: the eos token and, where the vocabulary has them, the chat
        templates' end-of-turn markers (<|eot_id|>, <|im_end|>, <|end|>)."""
        out = []
        for t in (self.special_tokens.get("eos_token"), "<|eot_id|>", "<|im_end|>", "<|end|>", "<|eom_id|>"):
            i = None if t is None else self.token_id(t)
            if i is not None and i not in out:
                out.append(i)
        return tuple(out)

    # ---- chat ---------------------------------------------------------------------------------
    @overload
    def apply_chat_template(self, messages: list[dict[str, str]], add_generation_prompt: bool = ...,
                            tokenize: Literal[False] = ..., **extra: Any) -> str: ...

    @overload
    def apply_chat_template(self, messages: list[dict[str, str]], add_generation_prompt: bool = ...,
                            *, tokenize: Literal[True], **extra: Any) -> list[int]: ...

    def apply_chat_template(self, messages: list[dict[str, str]], add_generation_prompt: bool = True,
                            tokenize: bool = False, **extra: Any) -> str | list[int]:
        """The conversation rendered by the chat template of tokenizer_config.json, as Hugging Face
        transformers' ``tokenizer.apply_chat_template(messages, add_generation_prompt=..., tokenize=False)``
        does it: a sandboxed Jinja environment (trim_blocks, lstrip_blocks), the variables ``messages``,
        ``add_generation_prompt``, the special tokens (``bos_token``, ``eos_token``, ...) and ``extra``
        (e.g. ``date_string="26 Jul 2024"``, ``tools=None``). With ``tokenize=True`` the token ids of that
        text, encoded without adding special tokens again (the template writes the BOS itself).

        >>> tok.apply_chat_template([{"role": "user", "content": "Hi"}])
        '<|begin_of_text|><|start_header_id|>user<|end_header_id|>\\n\\nHi<|eot_id|>...'
        """
        if not isinstance(messages, (list, tuple)):
            raise InvalidArgumentError(f"apply_chat_template: messages must be a list of {{'role': str, "
                                       f"'content': str}} dicts, got {type(messages).__name__}")
        for i, m in enumerate(messages):
            if not (isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)):
                raise InvalidArgumentError(f"apply_chat_template: messages[{i}] must be a dict with a str 'role' "
                                           f"and a str 'content', got {m!r:.80}")
        template = self._template()
        import jinja2

        variables = {**self.special_tokens, **extra}
        variables.setdefault("tools", None)
        variables.setdefault("documents", None)
        try:
            text = template.render(messages=[dict(m) for m in messages],
                                   add_generation_prompt=bool(add_generation_prompt), **variables)
        except _TemplateRaised as exc:
            raise InvalidArgumentError(f"the chat template refused the conversation: {exc}") from None
        except jinja2.TemplateError as exc:
            raise FormatError(f"the chat template of tokenizer_config.json failed to render: {exc}") from None
        if tokenize:
            return self.encode(text, add_special_tokens=False)
        return text

    def _template(self):
        if self._compiled_template is not None:
            return self._compiled_template
        if not isinstance(self.chat_template, str) or not self.chat_template:
            raise InvalidArgumentError("this model has no chat template (tokenizer_config.json gives no "
                                       "chat_template); pass the prompt as plain text or token ids instead")
        try:
            import jinja2
            import jinja2.ext
            import jinja2.nodes
            from jinja2.sandbox import ImmutableSandboxedEnvironment
        except ImportError:
            raise InvalidArgumentError("Tokenizer.apply_chat_template needs the `jinja2` package: "
                                       "pip install isthmus[llm]") from None

        def raise_exception(message):
            raise _TemplateRaised(message)

        def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
            # as transformers: json.dumps without HTML escaping and keeping non-ASCII text (Jinja's own
            # tojson escapes <, >, & and ')
            return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

        def strftime_now(fmt):
            from datetime import datetime

            return datetime.now().strftime(fmt)

        class _Generation(jinja2.ext.Extension):
            # transformers' {% generation %}...{% endgeneration %} (it marks the assistant's text for
            # training masks): the body rendered as it is, which is what transformers prints
            tags = {"generation"}

            def parse(self, parser):
                lineno = next(parser.stream).lineno
                body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
                return jinja2.nodes.CallBlock(self.call_method("_body"), [], [], body).set_lineno(lineno)

            def _body(self, caller):
                return caller()

        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                            extensions=[_Generation, jinja2.ext.loopcontrols])
        env.filters["tojson"] = tojson
        env.globals["raise_exception"] = raise_exception
        env.globals["strftime_now"] = strftime_now
        try:
            self._compiled_template = env.from_string(self.chat_template)
        except jinja2.TemplateSyntaxError as exc:
            raise FormatError(f"the chat_template of tokenizer_config.json is not a valid Jinja template: "
                              f"{exc.message} (line {exc.lineno})") from None
        return self._compiled_template


class _TemplateRaised(Exception):
    """raise_exception(...) called by a chat template."""
