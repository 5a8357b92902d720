"""A tiny synthetic data set in the processed llama2-70b layout, tokenized by the toy tokenizer."""

from __future__ import annotations

from cmcontract.publish import staged_file

from . import toytok

PROMPT = "<s>[INST] <<SYS>>\n{}\n<</SYS>>\n\n{} [/INST]"


def make_rows(n: int, offset: int = toytok.OFFSET, seed: int = 0) -> list[dict]:
    rows = []
    for i in range(n):
        system = "You are a helpful assistant." if i % 2 == 0 else "Answer briefly."
        question = f"Question {seed}-{i}: what is {i} plus {i * 3 % 7}? " + "Explain. " * (i % 4)
        text = PROMPT.format(system, question)
        answer = f"The answer is {i + i * 3 % 7}. It is a sum."
        tok_in = toytok.encode(text, add_special_tokens=True, offset=offset)
        tok_out = toytok.encode(answer, add_special_tokens=False, offset=offset) + [toytok.EOS_ID]
        rows.append({"id": f"synthetic.{seed}.{i}", "system_prompt": system, "question": question,
                     "output": answer, "input": text, "tok_input": tok_in, "tok_output": tok_out,
                     "tok_input_length": len(tok_in), "tok_output_length": len(tok_out), "origin": "synthetic"})
    return rows


def write_dataset(path: str, n: int, offset: int = toytok.OFFSET, seed: int = 0) -> str:
    """Write `n` rows as a pandas pickle at `path` (atomically); `offset` != 3 makes a mismatched set."""
    import pandas as pd

    # object columns, as the reference pickle has: readable without pyarrow by any pandas
    df = pd.DataFrame(make_rows(n, offset, seed), dtype=object)
    df.columns = pd.Index(list(df.columns), dtype=object)
    with staged_file(path) as tmp:
        df.to_pickle(tmp)
    return path
