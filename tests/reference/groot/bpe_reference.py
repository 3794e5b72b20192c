#!/usr/bin/python3
"""Reference encoder/decoder for Qwen2-style byte-level BPE (the oracle of edgevla's tokenizer).

Written from the tokenizer file formats, with the standard library only:
  1. added tokens (every entry of tokenizer.json's added_tokens, special or not) are split out
     first, leftmost-longest, on the raw text;
  2. the other segments are NFC-normalised (the Qwen2 normalizer);
  3. pre-tokenised with the Qwen2 split regex
       (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+
     evaluated here by a hand-written matcher (Debian's python3-regex is not installed): \\p{L}
     and \\p{N} are the Unicode general categories L* and N*, \\s is the Unicode White_Space
     property (as in Oniguruma and Rust's regex, which differ from Python's str.isspace on
     U+001C..U+001F), alternatives tried in order at each position with the backtracking a
     regex engine would do;
  4. each piece's UTF-8 bytes mapped through GPT-2's bytes-to-unicode table;
  5. BPE: repeatedly merge the adjacent pair of lowest merge rank (all of its occurrences, left
     to right), then look the symbols up in the vocabulary.
Decoding maps ids back to strings, byte-level symbols back to bytes, and UTF-8-decodes them
(invalid sequences replaced, as Qwen's `errors="replace"`).

  bpe_reference.py --tokenizer DIR|tokenizer.json "text" ...   prints the ids of each text

DIR may hold tokenizer.json, or vocab.json + merges.txt (+ added_tokens.json) as Qwen's and
Eagle's tokenizer folders do.
"""

import argparse
import json
import os
import sys
import unicodedata

# Unicode White_Space (PropList.txt); stable since Unicode 6.3.
WHITE_SPACE = frozenset(
    [chr(c) for c in range(0x09, 0x0E)] + [" ", "\u0085", "\u00a0", "\u1680"]
    + [chr(c) for c in range(0x2000, 0x200B)] + ["\u2028", "\u2029", "\u202f", "\u205f", "\u3000"])

QWEN2_SPLIT_REGEX = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
                     r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

# The contractions after the apostrophe, in the regex's order. Case-insensitive matching uses
# Unicode simple case folding: besides ASCII case, U+017F (long s) folds to 's'.
_CONTRACTIONS = ("s", "t", "re", "ve", "m", "ll", "d")
_FOLD = {"\u017f": "s"}


def is_letter(c):
    return unicodedata.category(c)[0] == "L"


def is_number(c):
    return unicodedata.category(c)[0] == "N"


def is_space(c):
    return c in WHITE_SPACE


def _fold(c):
    return _FOLD.get(c, c.lower() if c.isascii() else c)


def _match_at(text, i):
    """End of the Qwen2 regex's match starting at i (every position matches something)."""
    n = len(text)
    c = text[i]
    # 1. 's 't 're 've 'm 'll 'd, case-insensitive
    if c == "'":
        for word in _CONTRACTIONS:
            j = i + 1 + len(word)
            if j <= n and all(_fold(text[i + 1 + k]) == word[k] for k in range(len(word))):
                return j
    # 2. [^\r\n\p{L}\p{N}]?\p{L}+
    if is_letter(c):
        j = i + 1
        while j < n and is_letter(text[j]):
            j += 1
        return j
    if c not in "\r\n" and not is_number(c) and i + 1 < n and is_letter(text[i + 1]):
        j = i + 2
        while j < n and is_letter(text[j]):
            j += 1
        return j
    # 3. \p{N}
    if is_number(c):
        return i + 1

    # 4.  ?[^\s\p{L}\p{N}]+[\r\n]*
    def other(ch):
        return not (is_space(ch) or is_letter(ch) or is_number(ch))

    start = i + 1 if c == " " and i + 1 < n and other(text[i + 1]) else i
    if other(text[start]):
        j = start + 1
        while j < n and other(text[j]):
            j += 1
        while j < n and text[j] in "\r\n":
            j += 1
        return j
    # Only whitespace is left (c is \s: other characters were taken above).
    j = i
    while j < n and is_space(text[j]):
        j += 1
    # 5. \s*[\r\n]+ : up to and including the run's last \r or \n
    last_nl = max((k for k in range(i, j) if text[k] in "\r\n"), default=-1)
    if last_nl >= 0:
        return last_nl + 1
    # 6. \s+(?!\S) : the run, less its last character when a non-space follows
    if j == n:
        return j
    if j - i >= 2:
        return j - 1
    # 7. \s+
    return j


def pre_tokenize(text):
    """Pieces of `text` under the Qwen2 split regex (behaviour Isolated: nothing is dropped)."""
    pieces, i = [], 0
    while i < len(text):
        j = _match_at(text, i)
        pieces.append(text[i:j])
        i = j
    return pieces


def bytes_to_unicode():
    """GPT-2's reversible byte -> printable character table, in vocabulary order: the printable
    bytes '!'..'~', '¡'..'¬', '®'..'ÿ' map to themselves, the other 68 bytes to U+0100.. in
    increasing byte order. Token id b of a Qwen vocabulary is the b-th entry of this order."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) \
        + list(range(ord("®"), ord("ÿ") + 1))
    table, extra = {}, 0
    for b in printable:
        table[b] = chr(b)
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + extra)
            extra += 1
    order = printable + [b for b in range(256) if b not in printable]
    return table, order


BYTE_TO_CHAR, BYTE_ORDER = bytes_to_unicode()
CHAR_TO_BYTE = {ch: b for b, ch in BYTE_TO_CHAR.items()}


def byte_level(piece):
    return "".join(BYTE_TO_CHAR[b] for b in piece.encode("utf-8"))


class Tokenizer:
    """vocab {symbol string: id}, merges [(left, right)] in rank order, added [(content, id)]."""

    def __init__(self, vocab, merges, added):
        self.vocab = dict(vocab)
        self.ranks = {tuple(m): r for r, m in enumerate(merges)}
        self.added = sorted(added, key=lambda a: a[1])
        self.added_ids = {content: i for content, i in added}
        self.id_to_token = {i: s for s, i in self.vocab.items()}
        for content, i in added:
            self.id_to_token[i] = content
        self._cache = {}

    # --- loading -------------------------------------------------------------------------------

    @classmethod
    def from_dir(cls, path):
        """tokenizer.json (a file or a folder holding it), else vocab.json + merges.txt
        (+ added_tokens.json) in the folder."""
        tj = path if path.endswith(".json") else os.path.join(path, "tokenizer.json")
        if os.path.isfile(tj):
            return cls.from_tokenizer_json(tj)
        with open(os.path.join(path, "vocab.json"), encoding="utf-8") as f:
            vocab = json.load(f)
        merges = []
        with open(os.path.join(path, "merges.txt"), encoding="utf-8") as f:
            for line in f:
                line = line.rstrip("\n")
                if not line or line.startswith("#version"):
                    continue
                left, right = line.split(" ")
                merges.append((left, right))
        added = []
        at = os.path.join(path, "added_tokens.json")
        if os.path.isfile(at):
            with open(at, encoding="utf-8") as f:
                added = list(json.load(f).items())
        return cls(vocab, merges, added)

    @classmethod
    def from_tokenizer_json(cls, path):
        with open(path, encoding="utf-8") as f:
            tj = json.load(f)
        model = tj["model"]
        if model.get("type") != "BPE":
            raise ValueError(f"{path}: model type {model.get('type')!r}, expected BPE")
        merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in model["merges"]]
        added = [(a["content"], int(a["id"])) for a in tj.get("added_tokens", [])]
        return cls(model["vocab"], merges, added)

    # --- encoding ------------------------------------------------------------------------------

    def _split_added(self, text):
        """[(segment, is_added)]: added tokens matched leftmost, longest first at a position."""
        if not self.added_ids:
            return [(text, False)]
        by_first = {}
        for content in self.added_ids:
            by_first.setdefault(content[0], []).append(content)
        for lst in by_first.values():
            lst.sort(key=len, reverse=True)
        out, i, start = [], 0, 0
        while i < len(text):
            hit = next((c for c in by_first.get(text[i], ()) if text.startswith(c, i)), None)
            if hit is None:
                i += 1
                continue
            if start < i:
                out.append((text[start:i], False))
            out.append((hit, True))
            i += len(hit)
            start = i
        if start < len(text):
            out.append((text[start:], False))
        return out

    def bpe(self, symbols):
        """BPE of one byte-level piece -> list of symbol strings."""
        if symbols in self._cache:
            return self._cache[symbols]
        word = list(symbols)
        while len(word) > 1:
            best = min(((self.ranks.get((word[k], word[k + 1]), None), k) for k in range(len(word) - 1)),
                       key=lambda rk: (rk[0] is None, rk[0] if rk[0] is not None else 0, rk[1]))
            if best[0] is None:
                break
            pair = (word[best[1]], word[best[1] + 1])
            merged, k = [], 0
            while k < len(word):
                if k < len(word) - 1 and (word[k], word[k + 1]) == pair:
                    merged.append(word[k] + word[k + 1])
                    k += 2
                else:
                    merged.append(word[k])
                    k += 1
            word = merged
        self._cache[symbols] = word
        return word

    def encode(self, text):
        ids = []
        for segment, is_added in self._split_added(text):
            if is_added:
                ids.append(self.added_ids[segment])
                continue
            for piece in pre_tokenize(unicodedata.normalize("NFC", segment)):
                for sym in self.bpe(byte_level(piece)):
                    if sym not in self.vocab:
                        raise KeyError(f"BPE symbol {sym!r} (from {piece!r}) is not in the vocabulary")
                    ids.append(self.vocab[sym])
        return ids

    def decode(self, ids):
        out, pending = [], bytearray()
        for i in ids:
            tok = self.id_to_token.get(int(i))
            if tok is None:
                raise KeyError(f"token id {i} is not in the vocabulary")
            if int(i) in self.added_by_id():
                out.append(pending.decode("utf-8", errors="replace"))
                pending = bytearray()
                out.append(tok)
            else:
                pending.extend(CHAR_TO_BYTE[ch] for ch in tok)
        out.append(pending.decode("utf-8", errors="replace"))
        return "".join(out)

    def added_by_id(self):
        if not hasattr(self, "_added_by_id"):
            self._added_by_id = {i: c for c, i in self.added_ids.items()}
        return self._added_by_id

    def token_id(self, content):
        """Id of an added token or of a vocabulary symbol."""
        if content in self.added_ids:
            return self.added_ids[content]
        return self.vocab[content]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tokenizer", required=True, help="tokenizer.json, or a folder with it or vocab.json+merges.txt")
    ap.add_argument("text", nargs="+")
    args = ap.parse_args(argv)
    tok = Tokenizer.from_dir(args.tokenizer)
    for t in args.text:
        print(json.dumps(tok.encode(t)))


if __name__ == "__main__":
    sys.exit(main())
