#!/usr/bin/python3
"""The Python side of tests/model/groot/tokenizer_test.cpp: runs the NumPy reference's tokenizer
(tests/reference/groot/bpe_reference.py) and prompt code (groot_numpy.py) on the test's inputs.

  tokenizer_oracle.py IN.json OUT.json

IN:  {"tokenizers": {name: folder or tokenizer.json}, "texts": [str], "instructions": [str],
      "views": [[n, ...]]}
OUT: {"tokenizers": {name: {"ids": [[id]] per text, "pieces": [[str]] per text,
                            "decode_cases": [{"ids": [id], "text": str}]}},
      "formalized": [str] per instruction,
      "prompts": {name: [{"instruction": str, "views": [n], "text": str, "ids": [id]}]}}
"""

import json
import os
import sys
import unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "reference", "groot"))
import bpe_reference  # noqa: E402
import groot_numpy  # noqa: E402


def pieces(tok, text):
    out = []
    for segment, is_added in tok._split_added(text):
        out += [segment] if is_added else bpe_reference.pre_tokenize(unicodedata.normalize("NFC", segment))
    return out


def decode_cases(tok):
    """Id lists whose bytes are cut inside UTF-8 sequences or are invalid, around added tokens."""
    b = {x: tok.vocab[bpe_reference.BYTE_TO_CHAR[x]] for x in range(256)}
    im_end = tok.token_id("<|im_end|>")
    euro = "€".encode()  # e2 82 ac
    lists = [
        [b[euro[0]], b[euro[1]]],
        [b[euro[0]], b[euro[1]], im_end, b[euro[2]]],
        [b[0xF0], b[0x9F], b[0xA4], b[0x96]],
        [b[0xF0], b[0x9F], b[0xA4]],
        [b[0xC0], b[0xAF], b[ord("a")]],
        [b[0xED], b[0xA0], b[0x80], b[ord("b")]],
        [b[0xE0], b[0x80], b[0x80]],
        [b[0xF4], b[0x90], b[0x80], b[0x80]],
        [b[0xFF], b[0xFE], b[0x80]],
        [b[0xE2], im_end, b[0x82], b[0xAC]],
        [],
    ]
    return [dict(ids=ids, text=tok.decode(ids)) for ids in lists]


def main():
    src, dst = sys.argv[1], sys.argv[2]
    with open(src, encoding="utf-8") as f:
        inp = json.load(f)
    out = dict(tokenizers={}, prompts={})
    for name, path in inp["tokenizers"].items():
        tok = bpe_reference.Tokenizer.from_dir(path)
        out["tokenizers"][name] = dict(ids=[tok.encode(t) for t in inp["texts"]],
                                       pieces=[pieces(tok, t) for t in inp["texts"]],
                                       decode_cases=decode_cases(tok))
        prompts = []
        for instruction in inp["instructions"]:
            for views in inp["views"]:
                text = groot_numpy.prompt_text(groot_numpy.formalize_language(instruction), views)
                prompts.append(dict(instruction=instruction, views=views, text=text, ids=tok.encode(text)))
        out["prompts"][name] = prompts
    out["formalized"] = [groot_numpy.formalize_language(t) for t in inp["instructions"]]
    with open(dst, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False)


if __name__ == "__main__":
    main()
