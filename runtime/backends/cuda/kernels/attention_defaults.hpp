// The attention plan's defaults for AttentionArgs' "-1: the process's choice" fields, read once
// from the environment (env_knobs.hpp lists them), each with what the H200 measured for it
// (bench/results/issue9_h200/notes.md). attention.cu's plan is their one reader.
#pragma once

namespace edgevla::backends::cuda::attn_defaults {

bool hd48_on();
bool short_keys_on();
int narrow_mode();
int wg128_env();
bool wg128_b_env();
int wg_roles_env();
bool qk_trim_env();
int wg_keys_env();
bool wg256_roles_env();
int wg_env();
bool wg_tma_default();
bool wg_expert_default();
bool rotate_default();
bool cluster_default();

}  // namespace edgevla::backends::cuda::attn_defaults
