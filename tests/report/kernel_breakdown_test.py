#!/usr/bin/python3
"""bench/kernel_breakdown.py on hand-made Nsight Compute CSVs in the two layouts ncu writes
(the details page: one row per metric; the raw page: one column per metric), gzipped or not,
with and without the NVTX range column: kernel times and units, categories, the replay gap,
the split by range, and the JSON it writes."""
import gzip
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.join(HERE, "..", "..", "bench")
sys.path.insert(0, BENCH)
import kernel_breakdown as kb  # noqa: E402

HEAD = ('"ID","Process ID","Process Name","Host Name","thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLR_Type:Color:'
        'Msg_Type:Msg","Id:Domain:Start/Stop_Range:PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg","Kernel Name",'
        '"Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit",'
        '"Metric Value"')


def row(i, rng, kernel, unit, value):
    cell = f'9944  ""<default domain>:{rng}:none:none:none:none:none:none"" '
    return (f'"{i}","9944","bench","127.0.0.1","{cell}","","{kernel}","1","13","(256, 1, 1)","(94, 1, 1)","0","9.0",'
            f'"Command line profiler metrics","gpu__time_duration.sum","{unit}","{value}"')


DETAILS = "\n".join([
    "==PROF== Connected to process 9944",
    HEAD,
    row(0, "edgevla.groot.backbone", "nvjet_sm90_tst_128x160_64x5_2x1_v_bz_TNT", "ns", "90,000"),
    row(1, "edgevla.groot.backbone", "void edgevla::<unnamed>::attn_bf16<256, 32>(edgevla::Params)", "usecond", "20.5"),
    row(2, "edgevla.groot.backbone", "void edgevla::<unnamed>::rms_rows_wide_kernel<float, __nv_bfloat16>(const T1 *)",
        "ns", "5,500"),
    row(3, "edgevla.groot.action_head", "void edgevla::<unnamed>::geglu_kernel<__nv_bfloat16, 8>(const T1 *)", "ns",
        "2,700"),
    row(4, "edgevla.groot.action_head", "nvjet_sm90_tst_128x160_64x5_2x1_v_bz_TNT", "ns", "10,000"),
    row(5, "edgevla.groot.action_head", "some_other_kernel", "msecond", "0.001"),
]) + "\n"

RAW = "\n".join([
    '"ID","Kernel Name","gpu__time_duration.sum"',
    '"","","nsecond"',
    '"0","triton_per_fused_add_mean_mul_pow_rsqrt_0","3,000"',
    '"1","cudnn_generated_fort_native_sdpa_sm90_flash_fprop","12,000"',
    '"2","triton_poi_fused_gelu_mul_split_15","4,000"',
]) + "\n"


def check(cond, what):
    if not cond:
        print("FAIL:", what)
        sys.exit(1)


def main():
    with tempfile.TemporaryDirectory() as d:
        details = os.path.join(d, "details.csv")
        with open(details, "w") as f:
            f.write(DETAILS)
        raw_gz = os.path.join(d, "raw.csv.gz")
        with gzip.open(raw_gz, "wt") as f:
            f.write(RAW)

        k = kb.read_ncu_csv(details)
        check([round(us, 3) for _, us in k] == [90.0, 20.5, 5.5, 2.7, 10.0, 1.0], f"durations in µs: {k}")
        kr = kb.read_ncu_csv(details, with_ranges=True)
        check([r for _, _, r in kr] == ["edgevla.groot.backbone"] * 3 + ["edgevla.groot.action_head"] * 3,
              f"ranges: {kr}")
        check([kb.category(n) for n, _ in k] == ["gemm", "attention", "norm", "elementwise", "gemm", "other"],
              f"categories: {[kb.category(n) for n, _ in k]}")
        check(kb.short(k[1][0]) == "edgevla::attn_bf16<256, 32>", f"short name: {kb.short(k[1][0])}")

        r = kb.read_ncu_csv(raw_gz)
        check([round(us, 3) for _, us in r] == [3.0, 12.0, 4.0], f"raw page durations: {r}")
        check([kb.category(n) for n, _ in r] == ["norm", "attention", "elementwise"], "raw page categories")

        out = os.path.join(d, "b.json")
        p = subprocess.run([sys.executable, os.path.join(BENCH, "kernel_breakdown.py"), f"e={details}",
                            f"t={raw_gz}", "--replay-ms", "e=0.15", "--json", out, "--top", "3"],
                           capture_output=True, text=True)
        check(p.returncode == 0, f"exit {p.returncode}: {p.stderr}")
        j = json.load(open(out))
        check(j["e"]["kernels"] == 6 and abs(j["e"]["kernel_us"] - 129.7) < 0.05, f"totals: {j['e']}")
        check(abs(j["e"]["between_kernels_us"] - (150.0 - 129.7)) < 0.05, "the replay gap")
        check(j["e"]["categories"]["gemm"] == {"count": 2, "us": 100.0}, f"gemm total: {j['e']['categories']}")
        check(j["e"]["top"][0]["kernel"].startswith("nvjet_sm90_tst_128x160") and j["e"]["top"][0]["count"] == 2,
              f"top kernel: {j['e']['top'][0]}")
        check("replay_us" not in j["t"], "no replay given for t")

        p = subprocess.run([sys.executable, os.path.join(BENCH, "kernel_breakdown.py"), f"e={details}",
                            "--split-ranges", "--json", out], capture_output=True, text=True)
        check(p.returncode == 0, f"split exit {p.returncode}: {p.stderr}")
        j = json.load(open(out))
        check(sorted(j) == ["e/edgevla.groot.action_head", "e/edgevla.groot.backbone"], f"split names: {sorted(j)}")
        check(j["e/edgevla.groot.backbone"]["kernels"] == 3 and j["e/edgevla.groot.action_head"]["kernels"] == 3,
              "kernels per range")

        empty = os.path.join(d, "empty.csv")
        open(empty, "w").write("==PROF== nothing profiled\n")
        check(kb.read_ncu_csv(empty) == [], "an empty profile reads as no kernels")
    print("kernel_breakdown: ok")


if __name__ == "__main__":
    main()
