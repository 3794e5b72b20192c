"""A small synthetic Qwen-format tokenizer for generated GR00T checkpoints.

Real Qwen checkpoints ship a byte-level BPE (tokenizer.json, vocab.json, merges.txt,
added_tokens.json, tokenizer_config.json). Those cannot be downloaded here, so generated
checkpoints get one of the same format and rules, trained on the built-in text below:
  - ids 0..255 are the 256 byte symbols in GPT-2's bytes-to-unicode order (so single-byte
    tokens keep their real Qwen ids: '<' 27, '>' 29, ' ' 220, '\\n' 198, '0'..'9' 15..24);
  - then the symbols created by `n_merges` merges of a small deterministic BPE trainer
    (most frequent adjacent pair, ties broken by the pair's strings; words from the Qwen2
    pre-tokenizer on the NFC text, as the encoder splits them);
  - the 37 added tokens (<|endoftext|> .. </interval>) at their real ids 151643..151679 when
    the model's vocabulary has room (vocab_size >= 151680), otherwise right after the learned
    vocabulary, in the same order. With the real ids, the ids between the learned vocabulary
    and the added tokens hold reserved entries `<|reserved_N|>` that no merge produces (the
    vocabulary stays dense, as Qwen's is; their embedding rows are never reached).
"""

import heapq
import json
import os
import unicodedata
from collections import Counter

import bpe_reference
import groot_configs

# Built-in training text: robot instructions, the system prompt's words and some non-ASCII text
# (accents, CJK, Cyrillic, an emoji) so that multi-byte symbols get merged too. Written for this
# file; any text would do.
TRAIN_TEXT = """\
You are a helpful assistant. You are a careful assistant that helps a robot arm.
pick the pear from the counter and place it in the plate
pick up the red cube and put it into the blue bowl on the left side of the table
open the top drawer of the cabinet, then close it slowly
move the green apple from the cutting board to the basket near the sink
push the yellow block to the edge of the tray without knocking over the cup
grasp the handle of the mug and turn it so that the handle points to the right
place the spoon next to the fork, then put the napkin under both of them
fold the towel in half twice and stack it on top of the other towels
pour the water from the bottle into the glass until it is half full
take the lid off the pot and set it down on the counter beside the stove
press the button on the microwave and wait until the light turns green
wipe the table with the sponge from left to right, then rinse the sponge
hand the screwdriver to the person standing in front of the robot
insert the peg into the round hole and the square block into the square hole
sort the objects by color: red items in the first bin, blue items in the second bin
stack the three cups from largest to smallest, with the smallest one on top
The robot looks at the image from the camera on its wrist and at the image from the camera
above the table. Each image is split into patches; each patch becomes a token, and the tokens
of every image follow the instruction. The action head predicts a chunk of fifty future
actions for the arm, the hand and the gripper, and the controller executes them one by one.
Pick the orange carrot, the purple eggplant and the white onion, and put them in the pan.
Put the kettle on the stove. Turn the knob to the left. Then wait for the water to boil.
Is the drawer open? If it is open, close it; if it is closed, open it and take out the box.
The gripper closes when the object is between the fingers and opens again above the bowl.
Move slowly near people, stop when someone touches the arm, and report what happened.
Joints: shoulder pitch, shoulder roll, shoulder yaw, elbow, wrist pitch, wrist roll, wrist yaw.
Left hand: thumb, index, middle, ring, little finger. Right hand: the same five fingers.
Numbers and units: 12 cm, 3.5 kg, 90 degrees, 0.25 seconds, 4 steps, 1000 buckets, 2026.
Symbols appear too: (a, b), [x, y, z], {key: value}, a/b, a-b, a_b, 50%, #3, @home, $5, &, *.
Il robot prend la pomme rouge et la pose dans le panier à côté de l'évier.
Der Roboter öffnet die Schublade, nimmt den Löffel heraus und legt ihn auf den Tisch.
El robot coge la taza azul y la coloca sobre el plato pequeño de la mesa.
Робот берёт красный кубик и кладёт его в синюю коробку.
ロボットは赤いりんごを取って、青いお皿の上に置きます。
机器人拿起桌子上的杯子，然后把它放进水槽里。
로봇이 빨간 컵을 집어서 파란 상자에 넣습니다.
The robot finished the task 🤖 and the person said: "thank you, well done!"
It's done; they're ready; we've checked; I'm sure; you'll see; he'd agree. IT'S DONE.
	Tabs, double  spaces   and new lines
are whitespace the pre-tokenizer keeps in its own pieces.
image after image, the model reads the scene from every camera.
image tokens come first in each view, then the next image follows.
image one, image two, image three: each image is a view of the same scene.
image size and image count change the number of tokens.
system messages set the rules; user messages ask for a task.
user: pick the pear. assistant: the pear is on the plate.
system: You are a helpful assistant.
"""

TOKENIZER_FILES = ("tokenizer.json", "vocab.json", "merges.txt", "added_tokens.json",
                   "special_tokens_map.json", "tokenizer_config.json", "chat_template.json")


def _words(text):
    """Byte-level pieces of the text and their counts, as tuples of symbols."""
    counts = Counter()
    for piece in bpe_reference.pre_tokenize(unicodedata.normalize("NFC", text)):
        counts[tuple(bpe_reference.byte_level(piece))] += 1
    return counts


def train_bpe(n_merges, text=TRAIN_TEXT):
    """`n_merges` merges, each the most frequent adjacent pair at its turn (ties: the smaller
    (left, right) strings). Raises if the text has fewer possible merges."""
    counts = _words(text)
    words = [list(w) for w in counts]
    freq = list(counts.values())
    pair_count, where = Counter(), {}
    for wi, w in enumerate(words):
        for a, b in zip(w, w[1:]):
            pair_count[(a, b)] += freq[wi]
            where.setdefault((a, b), set()).add(wi)
    heap = [(-c, a, b) for (a, b), c in pair_count.items()]
    heapq.heapify(heap)
    merges = []
    while len(merges) < n_merges:
        if not heap:
            raise ValueError(f"the training text allows only {len(merges)} merges, {n_merges} asked")
        negc, a, b = heapq.heappop(heap)
        if pair_count.get((a, b), 0) != -negc or negc == 0:
            continue  # stale heap entry
        merges.append((a, b))
        new = a + b
        touched = set()
        for wi in sorted(where.pop((a, b), ())):
            w, f = words[wi], freq[wi]
            for x, y in zip(w, w[1:]):
                pair_count[(x, y)] -= f
                touched.add((x, y))
            merged, k = [], 0
            while k < len(w):
                if k < len(w) - 1 and w[k] == a and w[k + 1] == b:
                    merged.append(new)
                    k += 2
                else:
                    merged.append(w[k])
                    k += 1
            words[wi] = merged
            for x, y in zip(merged, merged[1:]):
                pair_count[(x, y)] += f
                where.setdefault((x, y), set()).add(wi)
                touched.add((x, y))
        for p in touched:
            c = pair_count.get(p, 0)
            if c > 0:
                heapq.heappush(heap, (-c, p[0], p[1]))
            else:
                pair_count.pop(p, None)
                where.pop(p, None)
        pair_count.pop((a, b), None)
    return merges


_TRAINED = {}


def layout(n_merges, vocab_size):
    """-> (vocab {symbol: id}, merges, added [(content, id, special)]) of the synthetic tokenizer."""
    if n_merges not in _TRAINED:
        # BPE training is prefix-consistent: the first k merges of a longer run are the k-merge run.
        longest = max([n_merges] + list(_TRAINED))
        merges = train_bpe(longest)
        for k in set(list(_TRAINED) + [n_merges]):
            _TRAINED[k] = merges[:k]
    merges = _TRAINED[n_merges]
    vocab = {bpe_reference.BYTE_TO_CHAR[b]: i for i, b in enumerate(bpe_reference.BYTE_ORDER)}
    for a, b in merges:
        if a + b not in vocab:
            vocab[a + b] = len(vocab)
    n_added = len(groot_configs.QWEN_ADDED_TOKENS)
    if vocab_size >= groot_configs.QWEN_VOCAB_SIZE:
        base = groot_configs.QWEN_FIRST_ADDED_ID
        # Keep the vocabulary dense up to the added tokens, as Qwen's is (loaders such as Hugging
        # Face tokenizers number added tokens from the vocabulary's size): reserved entries that
        # no merge produces fill the ids between the learned symbols and <|endoftext|>.
        for i in range(len(vocab), base):
            name = f"<|reserved_{i}|>"
            assert name not in vocab, f"reserved token {name} collides with a learned symbol"
            vocab[name] = i
    else:
        base = len(vocab)
    if base + n_added > vocab_size:
        raise ValueError(f"vocab_size {vocab_size} cannot hold {len(vocab)} learned symbols and "
                         f"{n_added} added tokens; lower bpe_merges or raise vocab_size")
    added = [(c, base + k, special) for k, (c, special) in enumerate(groot_configs.QWEN_ADDED_TOKENS)]
    return vocab, merges, added


def token_ids(cfg):
    """Ids of the tokens the model needs, for config.json and the reference."""
    _, _, added = layout(cfg["bpe_merges"], cfg["text"]["vocab_size"])
    ids = {c: i for c, i, _ in added}
    return dict(pad=ids["<|endoftext|>"], im_start=ids["<|im_start|>"], im_end=ids["<|im_end|>"],
                image_context=ids["<IMG_CONTEXT>"], image_start=ids["<img>"], image_end=ids["</img>"])


# Qwen2's chat format as the Eagle processor renders GR00T's conversation (spec §2): the
# default system prompt, the user turn holding the text then one `<image-k>` placeholder per
# image, no generation prompt. Written here as a jinja template for tools that want one.
CHAT_TEMPLATE = (
    "{% set n = namespace(image=0) %}"
    "{% for message in messages %}"
    "{% if loop.first and message['role'] != 'system' %}<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}"
    "<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'image' %}{% set n.image = n.image + 1 %}<image-{{ n.image }}>"
    "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|>\n"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def write(folder, cfg):
    """Writes the tokenizer files of `cfg` into `folder`."""
    vocab, merges, added = layout(cfg["bpe_merges"], cfg["text"]["vocab_size"])
    os.makedirs(folder, exist_ok=True)
    opts = dict(add_prefix_space=False, trim_offsets=False, use_regex=False)
    tj = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [dict(id=i, content=c, single_word=False, lstrip=False, rstrip=False,
                              normalized=False, special=s) for c, i, s in added],
        "normalizer": {"type": "NFC"},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": bpe_reference.QWEN2_SPLIT_REGEX},
             "behavior": "Isolated", "invert": False},
            dict(type="ByteLevel", **opts)]},
        "post_processor": dict(type="ByteLevel", **opts),
        "decoder": dict(type="ByteLevel", **opts),
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False,
                  "ignore_merges": False, "vocab": vocab, "merges": [f"{a} {b}" for a, b in merges]},
    }

    def dump(name, obj):
        with open(os.path.join(folder, name), "w", encoding="utf-8") as f:
            json.dump(obj, f, ensure_ascii=False, indent=2)
            f.write("\n")

    dump("tokenizer.json", tj)
    dump("vocab.json", vocab)
    with open(os.path.join(folder, "merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n")
        for a, b in merges:
            f.write(f"{a} {b}\n")
    dump("added_tokens.json", {c: i for c, i, _ in added})
    special = [c for c, _, s in added if s and c not in ("<|endoftext|>",)]
    dump("special_tokens_map.json", {
        "additional_special_tokens": special,
        "eos_token": dict(content="<|im_end|>", lstrip=False, normalized=False, rstrip=False, single_word=False),
        "pad_token": dict(content="<|endoftext|>", lstrip=False, normalized=False, rstrip=False, single_word=False)})
    dump("tokenizer_config.json", {
        "add_bos_token": False, "add_eos_token": False, "add_prefix_space": False,
        "added_tokens_decoder": {str(i): dict(content=c, lstrip=False, normalized=False, rstrip=False,
                                              single_word=False, special=s) for c, i, s in added},
        "additional_special_tokens": special,
        "bos_token": None, "clean_up_tokenization_spaces": False, "eos_token": "<|im_end|>",
        "errors": "replace", "model_max_length": 32768, "pad_token": "<|endoftext|>",
        "split_special_tokens": False, "tokenizer_class": "Qwen2Tokenizer", "unk_token": None})
    dump("chat_template.json", {"chat_template": CHAT_TEMPLATE})
    return vocab, merges, added
