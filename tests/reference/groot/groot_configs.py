"""GR00T N1.6 model sizes for the reference and the benchmarks (../shared/notes/groot-n16.md).

One dict per configuration holds every dimension a checkpoint needs. `full` is the published
3B model (spec §2, §3, §5): SigLIP2 27 x 1152, Qwen3-1.7B kept to layers 0-15 of 28, the
32-block alternating DiT, state/action width 128, horizon 50. `tiny` and `small` keep the
structure (and everything the preprocessing sees: patch 14, a 16 x 16 position grid, the
pixel-unshuffle ratio, state/action width 128, horizon 50, 32 embodiment slots) and shrink the
widths and depths, so that a NumPy forward takes well under a second (tiny) or a few (small).

The embodiments written into generated checkpoints (processor_config.json, statistics.json,
embodiment_id.json) are in EMBODIMENTS. Their ids are the real ones (spec §1); their
modality configurations and statistics are made up, modelled on the upstream fixtures, since
the base checkpoint's own json files were not read (spec §7 open question 1).
"""

import copy

# Qwen's added tokens and their ids in the real tokenizer (Eagle-Block2A-2B-v2 added_tokens.json,
# tokenizer_config.json): (content, special flag). Ids 151643 .. 151679 in this order.
QWEN_ADDED_TOKENS = [
    ("<|endoftext|>", True), ("<|im_start|>", True), ("<|im_end|>", True),
    ("<|object_ref_start|>", True), ("<|object_ref_end|>", True), ("<|box_start|>", True),
    ("<|box_end|>", True), ("<|quad_start|>", True), ("<|quad_end|>", True),
    ("<|vision_start|>", True), ("<|vision_end|>", True), ("<|vision_pad|>", True),
    ("<|image_pad|>", True), ("<|video_pad|>", True), ("<tool_call>", False), ("</tool_call>", False),
    ("<|fim_prefix|>", False), ("<|fim_middle|>", False), ("<|fim_suffix|>", False),
    ("<|fim_pad|>", False), ("<|repo_name|>", False), ("<|file_sep|>", False),
    ("<tool_response>", False), ("</tool_response>", False), ("<think>", False), ("</think>", False),
    ("<IMG_CONTEXT>", True), ("<img>", True), ("</img>", True), ("<box>", True), ("</box>", True),
    ("<quad>", True), ("</quad>", True), ("<ref>", True), ("</ref>", True), ("<interval>", True),
    ("</interval>", True),
]
QWEN_FIRST_ADDED_ID = 151643
QWEN_VOCAB_SIZE = 151680

# What the published checkpoint comes to (spec §5, §8): bytes in bf16, tensor count, keys per part.
PUBLISHED = dict(total_size_bf16=6_573_217_664, tensors=1106, params=3_286_608_832,
                 keys=dict(language=179, vision=448, mlp1=6, dit=456),
                 shards=2, shard_gb=(4.99, 1.58))

_FULL = dict(
    name="full",
    vision=dict(hidden_size=1152, num_hidden_layers=27, num_attention_heads=16, intermediate_size=4304,
                patch_size=14, num_patches=256, num_channels=3, layer_norm_eps=1e-6),
    # text: the Qwen3 config as vendored (28 layers); the checkpoint keeps layers 0..select_layer-1.
    text=dict(hidden_size=2048, num_hidden_layers=28, num_attention_heads=16, num_key_value_heads=8,
              head_dim=128, intermediate_size=6144, vocab_size=QWEN_VOCAB_SIZE, rms_norm_eps=1e-6,
              rope_theta=1_000_000.0, max_position_embeddings=40960, tie_word_embeddings=True),
    select_layer=16,
    downsample_ratio=0.5,
    # the action head (gr00t_n1d6 config names)
    backbone_embedding_dim=2048,
    hidden_size=1024,
    input_embedding_dim=1536,
    max_state_dim=128,
    max_action_dim=128,
    action_horizon=50,
    max_num_embodiments=32,
    max_seq_len=1024,
    dit=dict(num_layers=32, num_attention_heads=32, attention_head_dim=48, output_dim=1024),
    attend_text_every_n_blocks=2,
    num_inference_timesteps=4,
    num_timestep_buckets=1000,
    # preprocessing (processor_config.json)
    shortest_image_edge=256,
    crop_fraction=0.95,
    # the synthetic tokenizer: merges learned on the built-in text
    bpe_merges=900,
    # checkpoint layout
    max_shard_bytes=5_000_000_000,
)

_TINY = copy.deepcopy(_FULL)
_TINY.update(
    name="tiny",
    vision=dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                patch_size=14, num_patches=256, num_channels=3, layer_norm_eps=1e-6),
    text=dict(hidden_size=64, num_hidden_layers=3, num_attention_heads=4, num_key_value_heads=2,
              head_dim=16, intermediate_size=128, vocab_size=1024, rms_norm_eps=1e-6,
              rope_theta=1_000_000.0, max_position_embeddings=4096, tie_word_embeddings=True),
    select_layer=2,
    backbone_embedding_dim=64,
    hidden_size=32,
    input_embedding_dim=48,
    max_seq_len=64,
    dit=dict(num_layers=4, num_attention_heads=3, attention_head_dim=16, output_dim=32),
    bpe_merges=300,
    max_shard_bytes=2_000_000,
)

_SMALL = copy.deepcopy(_FULL)
_SMALL.update(
    name="small",
    vision=dict(hidden_size=128, num_hidden_layers=4, num_attention_heads=4, intermediate_size=512,
                patch_size=14, num_patches=256, num_channels=3, layer_norm_eps=1e-6),
    text=dict(hidden_size=256, num_hidden_layers=6, num_attention_heads=8, num_key_value_heads=4,
              head_dim=32, intermediate_size=768, vocab_size=4096, rms_norm_eps=1e-6,
              rope_theta=1_000_000.0, max_position_embeddings=4096, tie_word_embeddings=True),
    select_layer=4,
    backbone_embedding_dim=256,
    hidden_size=256,
    input_embedding_dim=256,
    max_seq_len=128,
    dit=dict(num_layers=8, num_attention_heads=8, attention_head_dim=32, output_dim=256),
    bpe_merges=600,
    max_shard_bytes=40_000_000,
)

CONFIGS = {"tiny": _TINY, "small": _SMALL, "full": _FULL}


def get(name):
    """A deep copy of configuration `name` (tiny|small|full)."""
    if name not in CONFIGS:
        raise KeyError(f"unknown GR00T config {name!r}; choose from {', '.join(CONFIGS)}")
    return copy.deepcopy(CONFIGS[name])


def check(cfg):
    """The structural rules every configuration keeps (fails with the rule that broke)."""
    v, t, d = cfg["vision"], cfg["text"], cfg["dit"]
    r = round(1 / cfg["downsample_ratio"])
    assert v["hidden_size"] % v["num_attention_heads"] == 0, "vision width must split into heads"
    assert int(round(v["num_patches"] ** 0.5)) ** 2 == v["num_patches"], "vision position grid must be square"
    assert t["num_attention_heads"] % t["num_key_value_heads"] == 0, "query heads must group over kv heads"
    assert cfg["select_layer"] <= t["num_hidden_layers"], "select_layer beyond the LLM depth"
    assert cfg["backbone_embedding_dim"] == t["hidden_size"], "backbone features are the LLM width"
    assert d["output_dim"] == cfg["hidden_size"], "the decoder reads the DiT output (hidden_size)"
    assert d["num_layers"] % (2 * cfg["attend_text_every_n_blocks"]) == 0, "DiT depth must hold text and image blocks"
    assert cfg["max_seq_len"] >= cfg["action_horizon"], "position table shorter than the horizon"
    assert r == 2, "pixel unshuffle ratio 2 (downsample_ratio 0.5)"
    for e in EMBODIMENTS:
        assert e["id"] < cfg["max_num_embodiments"], f"embodiment {e['tag']} id beyond the table"
        assert state_width(e, True) <= cfg["max_state_dim"], f"embodiment {e['tag']} state too wide"
        assert sum(g[1] for g in e["action"]) <= cfg["max_action_dim"], f"embodiment {e['tag']} action too wide"
        assert e["horizon"] <= cfg["action_horizon"], f"embodiment {e['tag']} horizon too long"
    return cfg


# --- embodiments written into generated checkpoints ---------------------------------------------
# state: [(group, width)]; action: [(group, width, rep, type, format, state_key)].
# sin_cos / mean_std: the modality config's sin_cos_embedding_keys / mean_std_embedding_keys.
# degenerate: {group: [dims]} where statistics get min == max and std == 0 (edge cases of §8).

EMBODIMENTS = [
    dict(tag="gr1", id=20, horizon=16, video=["ego_view"],
         state=[("left_arm", 7), ("right_arm", 7), ("left_hand", 6), ("right_hand", 6), ("waist", 3)],
         state_sin_cos=["left_arm", "right_arm"], state_mean_std=["waist"],
         action=[("left_arm", 7, "RELATIVE", "NON_EEF", "DEFAULT", None),
                 ("right_arm", 7, "RELATIVE", "NON_EEF", "DEFAULT", None),
                 ("left_hand", 6, "ABSOLUTE", "NON_EEF", "DEFAULT", None),
                 ("right_hand", 6, "ABSOLUTE", "NON_EEF", "DEFAULT", None),
                 ("waist", 3, "ABSOLUTE", "NON_EEF", "DEFAULT", None)],
         action_mean_std=["waist"], degenerate={}),
    dict(tag="libero_panda", id=2, horizon=16, video=["image", "wrist_image"],
         state=[("x", 1), ("y", 1), ("z", 1), ("roll", 1), ("pitch", 1), ("yaw", 1), ("gripper", 2)],
         state_sin_cos=None, state_mean_std=None,
         action=[(k, 1, "ABSOLUTE", "NON_EEF", "DEFAULT", None)
                 for k in ("x", "y", "z", "roll", "pitch", "yaw", "gripper")],
         action_mean_std=None, degenerate={}),
    dict(tag="oxe_droid", id=16, horizon=32,
         video=["exterior_image_1_left", "exterior_image_2_left", "wrist_image_left"],
         state=[("eef_9d", 9), ("gripper_position", 1), ("joint_position", 7)],
         state_sin_cos=None, state_mean_std=["joint_position"],
         action=[("eef_9d", 9, "RELATIVE", "EEF", "XYZ_ROT6D", None),
                 ("gripper_position", 1, "ABSOLUTE", "NON_EEF", "DEFAULT", None)],
         action_mean_std=None, degenerate={}),
    dict(tag="unitree_g1", id=8, horizon=30, video=["ego_view"],
         state=[("left_leg", 6), ("right_leg", 6), ("waist", 3), ("left_arm", 7), ("right_arm", 7),
                ("left_hand", 7), ("right_hand", 7)],
         state_sin_cos=["left_leg", "right_leg"], state_mean_std=None,
         action=[("left_arm", 7, "RELATIVE", "NON_EEF", "DEFAULT", None),
                 ("right_arm", 7, "RELATIVE", "NON_EEF", "DEFAULT", None),
                 ("left_hand", 7, "ABSOLUTE", "NON_EEF", "DEFAULT", None),
                 ("right_hand", 7, "ABSOLUTE", "NON_EEF", "DEFAULT", None),
                 ("waist", 3, "ABSOLUTE", "NON_EEF", "DEFAULT", None)],
         action_mean_std=["left_hand", "right_hand"], degenerate={}),
    # Edge cases: an xyz+rotvec EEF group, a relative group whose reference is another state key,
    # and a joint group with one dimension whose statistics are degenerate (min == max, std == 0).
    dict(tag="new_embodiment", id=10, horizon=16, video=["front", "wrist"],
         state=[("eef", 6), ("joints", 6), ("gripper", 1)],
         state_sin_cos=None, state_mean_std=["gripper"],
         action=[("eef", 6, "RELATIVE", "EEF", "XYZ_ROTVEC", None),
                 ("arm", 6, "RELATIVE", "NON_EEF", "DEFAULT", "joints"),
                 ("gripper", 1, "ABSOLUTE", "NON_EEF", "DEFAULT", None)],
         action_mean_std=["gripper"], degenerate={"joints": [3], "arm": [3], "gripper": []}),
]


def state_width(e, sincos):
    """Width of an embodiment's normalised state (sin/cos groups doubled when `sincos`)."""
    keys = set(e["state_sin_cos"] or []) if sincos else set()
    return sum(w * (2 if k in keys else 1) for k, w in e["state"])


def embodiment(tag):
    for e in EMBODIMENTS:
        if e["tag"] == tag:
            return copy.deepcopy(e)
    raise KeyError(f"no built-in embodiment {tag!r}")


for _c in CONFIGS.values():
    check(_c)
