"""Token counts of the tool definitions a model reads on every turn (issue 45 item 5).

Counted with OpenAI's BPE tokenizers, ``o200k_base`` (GPT-4o and later) and ``cl100k_base``
(GPT-4, GPT-3.5), from the ``bpe-openai`` package (the ``tokens`` extra): its wheel ships both
vocabularies, byte-identical to the files tiktoken downloads at run time (same SHA-256), so the
count works offline and gives tiktoken's numbers. Other vendors' tokenizers differ by a few
percent on this text; the count is a measure, not a bill.

What a model reads of a format (:func:`model_facing`): the whole entry for OpenAI and Anthropic;
on MCP the name, description and ``inputSchema`` (annotations and ``outputSchema`` are for the
client, which turns the rest into its model's tool format).
"""

from __future__ import annotations

import json
import warnings
from functools import cache
from typing import Any

from .schemas import FORMATS, tool_schemas
from .spec import Mode

ENCODINGS: tuple[str, ...] = ("o200k_base", "cl100k_base")
MCP_MODEL_KEYS = ("name", "description", "inputSchema")


class TokenizerMissing(ImportError):
    """The tokenizer package is not installed."""


@cache
def _encoding(name: str) -> Any:
    if name not in ENCODINGS:
        raise ValueError(f"unknown encoding {name!r}; expected one of {', '.join(ENCODINGS)}")
    try:
        import bpe_openai
    except ImportError:
        raise TokenizerMissing(
            "counting tokens needs bpe-openai: pip install 'smartflow-engine[tokens]'"
        ) from None
    return bpe_openai.get_encoding(name)


def count_tokens(text: str, encoding: str = "o200k_base") -> int:
    """The number of tokens of ``text`` in ``encoding`` (one of :data:`ENCODINGS`)."""
    with warnings.catch_warnings():  # its lazy loader calls importlib.resources.open_binary
        warnings.simplefilter("ignore", DeprecationWarning)
        return len(_encoding(encoding).encode(text))


def model_facing(fmt: str, mode: Mode | str | None = None) -> str:
    """The tool list of ``mode`` in ``fmt`` as a model reads it, as compact JSON (see the module
    docstring)."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown schema format {fmt!r}; expected one of {', '.join(FORMATS)}")
    entries = tool_schemas(fmt, mode)
    if fmt == "mcp":
        entries = [{k: e[k] for k in MCP_MODEL_KEYS} for e in entries]
    return json.dumps(entries, ensure_ascii=False, separators=(",", ":"))


def tool_list_tokens(fmt: str, mode: Mode | str | None = None, encoding: str = "o200k_base") -> int:
    """Tokens of the tool list of ``mode`` in ``fmt`` (:func:`model_facing`)."""
    return count_tokens(model_facing(fmt, mode), encoding)
