"""A byte-level toy tokenizer shared by the stand-in server and the tests.

Ids 0..2 are special (<unk>, <s>, </s>); every UTF-8 byte b is id b + 3. The literal
text "<s>" / "</s>" maps to the special ids, as Llama's tokenizer does.
"""

from __future__ import annotations

BOS_ID = 1
EOS_ID = 2
OFFSET = 3
VOCAB_SIZE = 256 + OFFSET
_SPECIALS = {"<s>": BOS_ID, "</s>": EOS_ID}


def encode(text: str, add_special_tokens: bool = True, offset: int = OFFSET) -> list[int]:
    """Token ids of `text`; `offset` other than 3 gives a deliberately different tokenizer."""
    ids: list[int] = [BOS_ID] if add_special_tokens else []
    i = 0
    while i < len(text):
        for lit, tid in _SPECIALS.items():
            if text.startswith(lit, i):
                ids.append(tid)
                i += len(lit)
                break
        else:
            ids.extend(b + offset for b in text[i].encode("utf-8"))
            i += 1
    return ids


def decode(ids: list[int], skip_special_tokens: bool = True) -> str:
    out = bytearray()
    for t in ids:
        if t >= OFFSET:
            out.append((t - OFFSET) % 256)
        elif not skip_special_tokens:
            out.extend({BOS_ID: b"<s>", EOS_ID: b"</s>"}.get(t, b"<unk>"))
    return out.decode("utf-8", errors="replace")
