"""`nucleus bench` prints what bench/speed.py parses: one 'ppN V tok/s' and
one 'tgN V tok/s' line, with positive values for the sizes asked for."""

import importlib.util
import json
import os
import pathlib
import re
import subprocess

import pytest

from conftest import DEFAULT_MODEL, NUCLEUS_BIN, ROOT, require_binary_and_model


def load_speed():
    spec = importlib.util.spec_from_file_location("speed",
                                                  ROOT / "bench/speed.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_speed_parses_nucleus_bench_output():
    require_binary_and_model()
    out = subprocess.run(
        [NUCLEUS_BIN, "bench", "-m", DEFAULT_MODEL, "-t", "1", "-p", "16",
         "-g", "8", "-r", "1"], capture_output=True, text=True, timeout=120,
        check=True).stdout
    res = load_speed().parse_nucleus(out, 16, 8)
    assert res["pp"] > 0 and res["tg"] > 0, out


def test_bench_reports_its_kernels():
    """`nucleus bench` names the kernel table; --no-repack never picks amx
    (llama.cpp --no-repack's order), the default is amx exactly when the CPU
    has it (the --no-repack table otherwise)."""
    require_binary_and_model()
    env = {k: v for k, v in os.environ.items() if k != "NUCLEUS_KERNELS"}

    def kernels(*extra):
        out = subprocess.run(
            [NUCLEUS_BIN, "bench", "-m", DEFAULT_MODEL, "-t", "1", "-p", "1",
             "-g", "0", "-r", "1", *extra], capture_output=True, text=True,
            timeout=120, check=True, env=env).stdout
        m = re.search(r"^kernels: (\S+)$", out, re.M)
        assert m, out
        return m.group(1)

    plain, default = kernels("--no-repack"), kernels()
    assert plain in ("avx512", "avx2", "ref")
    assert default in ("amx", plain)
    if default == "amx":
        assert "amx_int8" in pathlib.Path("/proc/cpuinfo").read_text()


def test_speed_parser_rejects_missing_or_mismatched_tests():
    speed = load_speed()
    assert speed.parse_nucleus("pp512 93.10 tok/s\ntg128 52.5 tok/s\n", 512,
                               128) == {"pp": 93.1, "tg": 52.5}
    for bad in ("", "pp512 93.1 tok/s\n", "pp256 93.1 tok/s\ntg128 5 tok/s",
                "pp512 0.00 tok/s\ntg128 5 tok/s"):
        try:
            speed.parse_nucleus(bad, 512, 128)
        except speed.BenchError:
            continue
        raise AssertionError(f"accepted {bad!r}")


def load_profile():
    spec = importlib.util.spec_from_file_location("profile_",
                                                  ROOT / "bench/profile.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_profile_groups_helpers_with_their_caller():
    prof = load_profile()
    files = {"nc_expf_ggml": "src/kernels/ops.c", "att_worker": "src/model/forward.c",
             "nc_threadpool_run": "src/base/threadpool.c",
             "worker_main": "src/base/threadpool.c", "add_avx2": "src/kernels/ops_avx2.c",
             "rows_worker": "src/model/archs/arch_llama.c", "mm_worker": "src/model/forward.c",
             "nc_avx2_dot_q4_1": "src/kernels/avx2.c",
             "load_chunk": "src/kernels/avx512_gemm.c",
             "nc_strtab_find": "src/tokenizer/tokenizer_strtab.c",
             "llama_forward": "src/model/archs/arch_llama.c"}
    text = (
        "123 \n"
        "\t68b0 fmaf@plt (/x/nucleus)\n"
        "\t3adb4 nc_expf_ggml (/x/nucleus)\n"
        "\t16574 att_one (inlined)\n"
        "\t16574 att_worker (/x/nucleus)\n"
        "\t42845 nc_threadpool_run (/x/nucleus)\n"
        "\n"
        "124 \n"
        "\t3adb4 add_avx2 (/x/nucleus)\n"
        "\t3af9f rows_worker (/x/nucleus)\n"
        "\t3af9f worker_main (/x/nucleus)\n"
        "\n"
        "125 \n"
        "\tffffffff8158c3e1 futex_wait (kernel.kallsyms)\n"
        "\t5c404 __GI___lll_lock_wait (/lib/libc.so.6)\n"
        "\t5c404 mm_worker (/x/nucleus)\n"
        "\n"
        "126 \n"
        "\t1 _mm256_fmadd_ps (inlined)\n"
        "\t2 nc_avx2_dot_q4_1 (/x/nucleus)\n"
        "\t3 worker_main (/x/nucleus)\n"
        "\n"
        "127 \n"
        "\t1 nc_strtab_find (/x/nucleus)\n"
        "\n"
        "128 \n"
        "\t1 spin_pause (inlined)\n"
        "\t1 worker_main (/x/nucleus)\n"
        "\n"
        "129 \n"
        "\t1 llama_forward (/x/nucleus)\n"
        "\t3 nc_threadpool_run (/x/nucleus)\n"
        "\n"
        "130 \n"
        "\t1 load_chunk (/x/nucleus)\n")
    got = prof.samples(text)
    assert [prof.classify(f, files) for f in got] == [
        "attention", "elementwise", "thread pool/sync", "matmul", "other",
        "thread pool/sync", "other", "matmul"]
    rows = {g: syms for g, _, syms in prof.summarize(got, 2, files)}
    assert rows["matmul"].startswith("nc_avx2_dot_q4_1 ")


def test_profile_counts_flash_attention_as_attention():
    """Flash attention's kernels (src/kernels/attn_flash*.c) and its driver
    (src/model/forward_flash.c) are attention, not matmul as the rest of
    src/kernels/."""
    prof = load_profile()
    files = {"nc_flash_tile_prompt_avx512":
             "src/kernels/attn_flash_prompt_avx512.c",
             "flash_worker": "src/model/forward_flash.c",
             "worker_main": "src/base/threadpool.c",
             "nc_avx2_dot_q4_1": "src/kernels/avx2.c"}
    text = ("1 \n"
            "\t1 nc_flash_tile_prompt_avx512 (/x/nucleus)\n"
            "\t2 flash_worker (/x/nucleus)\n"
            "\t3 worker_main (/x/nucleus)\n"
            "\n"
            "2 \n"
            "\t1 gather_tile (inlined)\n"
            "\t2 flash_worker (/x/nucleus)\n"
            "\n"
            "3 \n"
            "\t1 nc_avx2_dot_q4_1 (/x/nucleus)\n")
    got = prof.samples(text)
    assert [prof.classify(f, files) for f in got] == [
        "attention", "attention", "matmul"]


def test_profile_counts_the_output_head_apart():
    prof = load_profile()
    files = {"nc_avx512_gemv_q8_0": "src/kernels/avx512_gemv.c",
             "mm_head_rows": "src/model/forward.c", "mm_worker": "src/model/forward.c"}
    text = ("1 \n"
            "\t1 nc_avx512_gemv_q8_0 (/x/nucleus)\n"
            "\t2 mm_head_rows (/x/nucleus)\n"
            "\t3 mm_worker (/x/nucleus)\n"
            "\n"
            "2 \n"
            "\t1 nc_avx512_gemv_q8_0 (/x/nucleus)\n"
            "\t3 mm_worker (/x/nucleus)\n")
    got = prof.samples(text)
    assert [prof.classify(f, files) for f in got] == ["output head", "matmul"]


def test_speed_parses_depth_lines():
    speed = load_speed()
    out = "pp512 93.1 tok/s\ntg128 50 tok/s\npp512 @ d4096 41.5 tok/s\n" \
          "tg128 @ d4096 30.25 tok/s\n"
    assert speed.parse_nucleus(out, 512, 128, 4096) == {"pp": 41.5,
                                                        "tg": 30.25}
    assert speed.parse_nucleus(out, 512, 128) == {"pp": 93.1, "tg": 50.0}


def test_bench_depth_runs_after_the_cached_depth():
    """-d N: both tests after N tokens in the KV cache, which come from the
    prefix cache (the bench fails if they did not); --no-prefix-cache is
    refused with -d."""
    require_binary_and_model()
    p = subprocess.run(
        [NUCLEUS_BIN, "bench", "-m", DEFAULT_MODEL, "-t", "1", "-p", "16",
         "-g", "4", "-r", "1", "-d", "200"], capture_output=True, text=True,
        timeout=120)
    assert p.returncode == 0, p.stderr
    res = load_speed().parse_nucleus(p.stdout, 16, 4, 200)
    assert res["pp"] > 0 and res["tg"] > 0, p.stdout
    p = subprocess.run(
        [NUCLEUS_BIN, "bench", "-m", DEFAULT_MODEL, "-p", "16", "-g", "0",
         "-d", "200", "--no-prefix-cache"], capture_output=True, text=True,
        timeout=120)
    assert p.returncode == 2 and "prefix cache" in p.stderr


def test_peer_bench_keeps_each_load_mode(monkeypatch):
    """llama-bench runs every test file-mapped and read into memory (-lm
    mmap,none); both are kept apart (the table takes the mode of the
    higher median), and a run missing one is an error."""
    speed = load_speed()
    rows = [{"load_mode": m, "n_prompt": p, "n_gen": g, "n_depth": 0,
             "avg_ts": v}
            for m, p, g, v in (("mmap", 512, 0, 100.0), ("mmap", 0, 128, 9.0),
                               ("none", 512, 0, 90.0), ("none", 0, 128, 11.0))]
    seen = {}

    def fake_run(cmd, what, env=None):
        seen["cmd"] = [str(c) for c in cmd]
        return json.dumps(rows)

    monkeypatch.setattr(speed, "run", fake_run)
    assert speed.peer_bench(pathlib.Path("/bin"), "m.gguf", 1, 512, 128) == {
        "mmap": {"pp": 100.0, "tg": 9.0}, "none": {"pp": 90.0, "tg": 11.0}}
    assert "mmap,none" in seen["cmd"]
    rows = rows[:2]
    with pytest.raises(speed.BenchError):
        speed.peer_bench(pathlib.Path("/bin"), "m.gguf", 1, 512, 128)


def test_profile_counts_the_file_read_as_model_load():
    """The kernel zeroing the pages the file is read into counts as model
    load (mapped_file.c's frame above it), not as other."""
    prof = load_profile()
    files = {"read_all": "src/base/mapped_file.c", "nc_strtab_find":
             "src/tokenizer/tokenizer_strtab.c"}
    got = prof.samples(
        "1 \n"
        "\tffffffff1 clear_page_erms (kernel.kallsyms)\n"
        "\tffffffff2 folio_zero_user (kernel.kallsyms)\n"
        "\t5c404 __libc_pread (/lib/libc.so.6)\n"
        "\t1 read_all (/x/nucleus)\n"
        "\n"
        "2 \n"
        "\t1 nc_strtab_find (/x/nucleus)\n")
    assert [prof.classify(f, files) for f in got] == ["model load", "other"]


def speed_record(speed):
    med = {("peer", "pp"): 150.1, ("nucleus", "pp"): 484.9,
           ("peer", "tg"): 72.2, ("nucleus", "tg"): 119.2}
    samples = {("nucleus", "pp"): [484.9, 480.0], ("peer mmap", "tg"): [72.2]}
    return speed.make_record(
        command="bench/speed.py --models Q4_1 --threads 1", date="2026-12-02 18:35",
        load_before="0.43 0.5 0.6", load_after="1.0 0.9 0.8",
        cpu="AMD EPYC (2 logical cores; avx2 avx512f)", commit="4e8a0d0",
        kernels="avx512", rounds=7, pp=512, tg=128,
        rows=[("Q4_1 (default)", 1, med, samples)])


def test_speed_markdown_is_the_performance_table():
    """--markdown prints one line naming the command, CPU, commit and date,
    then the table docs/PERFORMANCE.md holds: medians to 0.1 tok/s, ratios
    nucleus / llama.cpp to 0.01."""
    speed = load_speed()
    md = speed.markdown(speed_record(speed)).splitlines()
    assert md[0].startswith("`bench/speed.py --models Q4_1 --threads 1`, AMD EPYC")
    assert "commit 4e8a0d0" in md[0] and "2026-12-02 18:35 UTC" in md[0]
    assert md[1] == ""
    assert md[2] == ("| model | threads | pp512 llama.cpp | pp512 nucleus | "
                     "ratio | tg128 llama.cpp | tg128 nucleus | ratio |")
    assert md[3] == "|---|---:|---:|---:|---:|---:|---:|---:|"
    assert md[4] == ("| Q4_1 (default) | 1 | 150.1 | 484.9 | 3.23 | 72.2 | "
                     "119.2 | 1.65 |")
    assert len(md) == 5


def test_speed_markdown_lists_the_kv_bytes_per_position():
    """A run with the models' KV cache lines (`nucleus info`) lists them
    under the table, one per model, and --show's record keeps them."""
    speed = load_speed()
    rec = speed_record(speed)
    rec["kv"] = {"Q4_1 (default)": "23040 bytes per position"}
    md = speed.markdown(rec).splitlines()
    assert md[5:] == ["", "KV cache (nucleus info):",
                      "- Q4_1 (default): 23040 bytes per position"]


def test_speed_reads_the_kv_line_of_nucleus_info():
    """nucleus_kv takes `nucleus info`'s KV cache line: SmolLM2's 30 layers
    of 3 KV heads of 64, K and V in F16, are 23040 bytes per position."""
    require_binary_and_model()
    assert load_speed().nucleus_kv(NUCLEUS_BIN, DEFAULT_MODEL) == \
        "23040 bytes per position"


def test_speed_makes_the_shaped_models_by_family(monkeypatch):
    """QWEN35, QWEN35MOE, GPTOSS and GEMMA4 each run make_bench_models.sh
    with only their family in BENCH_MODELS and take the file it names."""
    speed = load_speed()
    calls = []

    def fake_run(cmd, what, env=None):
        calls.append(env["BENCH_MODELS"])
        fam = env["BENCH_MODELS"]
        qtype = "MXFP4" if fam == "gptoss" else "Q4_K_M"
        return f"/m/x.Q4_K_M.gguf\n/m/{fam}-bench.{qtype}.gguf\n"

    monkeypatch.setattr(speed, "run", fake_run)
    got = speed.resolve_models("QWEN35,qwen35moe,GPTOSS,GEMMA4", "/peer")
    assert calls == ["qwen35", "qwen35moe", "gptoss", "gemma4"]
    assert got == [("QWEN35 Q4_K_M", pathlib.Path("/m/qwen35-bench.Q4_K_M.gguf")),
                   ("QWEN35MOE Q4_K_M",
                    pathlib.Path("/m/qwen35moe-bench.Q4_K_M.gguf")),
                   ("GPTOSS MXFP4", pathlib.Path("/m/gptoss-bench.MXFP4.gguf")),
                   ("GEMMA4 Q4_K_M", pathlib.Path("/m/gemma4-bench.Q4_K_M.gguf"))]
    monkeypatch.setattr(speed, "run", lambda cmd, what, env=None: "/m/a.gguf\n")
    with pytest.raises(speed.BenchError):
        speed.resolve_models("GEMMA4", "/peer")


def test_speed_json_appends_runs_and_show_prints_them(tmp_path, capsys):
    speed = load_speed()
    path = tmp_path / "speed.json"
    rec = speed_record(speed)
    speed.append_record(path, rec)
    speed.append_record(path, dict(rec, commit="next"))
    runs = json.loads(path.read_text())
    assert [r["commit"] for r in runs] == ["4e8a0d0", "next"]
    assert runs[0]["rows"][0]["samples"]["nucleus pp"] == [484.9, 480.0]
    assert runs[0]["rows"][0]["llama.cpp"] == {"pp": 150.1, "tg": 72.2}
    import sys
    argv = sys.argv
    try:
        sys.argv = ["speed.py", "--show", str(path), "--run", "0"]
        assert speed.main() == 0
    finally:
        sys.argv = argv
    assert capsys.readouterr().out.strip() == speed.markdown(rec)


def test_recorded_speed_runs_render():
    """Every run of bench/results/speed.json (the history) is data the
    table can be printed from."""
    speed = load_speed()
    runs = speed.load_records(ROOT / "bench/results/speed.json")
    assert runs
    for run in runs:
        for key in ("date", "commit", "cpu", "command", "pp", "tg", "rows"):
            assert key in run, (key, run.get("date"))
        assert speed.markdown(run).count("\n| ") == len(run["rows"]) + 1


def test_spec_ceiling_replays_the_copyable_runs():
    """bench/spec_ceiling.py: a reply that copies the prompt after its
    second token drafts it in runs of draft_max, each at c(draft_max); a
    reply that copies nothing is plain decoding."""
    spec = importlib.util.spec_from_file_location(
        "spec_ceiling", ROOT / "bench/spec_ceiling.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    prompt = list(range(10, 30))
    # (29, 10) occurs nowhere: one plain step; then (10, 11) continues the
    # prompt: two steps of 8 drafts, all kept
    copyable, ceiling = mod.replay(prompt, list(range(10, 30)), [1.5] * 8,
                                   8)
    assert copyable == 18
    assert abs(ceiling - 19 / (1 + 1.5 + 1.5)) < 1e-9
    # at draft_max 4: three runs of 4 and a last of 2 (its token after is
    # the reply's last), each at c(k) = 1.2
    _, ceiling4 = mod.replay(prompt, list(range(10, 30)), [1.2] * 8, 4)
    assert abs(ceiling4 - 19 / (1 + 4 * 1.2)) < 1e-9
    assert mod.replay(prompt, list(range(100, 120)), [1.5] * 8, 8) == (0,
                                                                     1.0)


def test_spec_bench_prompts_are_the_templates_own():
    """bench/speculative.py's prompts with a system turn (the `file` task)
    are what the chat templates render for that conversation: the default
    model's own (ChatML) and Gemma 3's (its system text before the first
    user turn's), then the reply's start."""
    require_binary_and_model()
    spec = importlib.util.spec_from_file_location(
        "speculative", ROOT / "bench/speculative.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    ask, start, prediction, system = mod.ASKS["file"]
    assert system and mod.MODULE in ask and "total" not in prediction
    assert prediction == mod.MODULE.replace("total", "acc")
    convo = json.dumps([{"role": "system", "content": system},
                        {"role": "user", "content": ask}])
    for template, extra in (("chatml", []),
                            ("gemma", ["--chat-template",
                                       str(ROOT / "tests/data/templates/"
                                           "gemma3.jinja")])):
        p = subprocess.run([NUCLEUS_BIN, "template", "-m", DEFAULT_MODEL,
                            *extra, "-"], input=convo, capture_output=True,
                           text=True, timeout=60, check=True)
        want = p.stdout
        if template == "gemma":  # the template's bos_token first (the
            # tokenizer adds it to a prompt)
            bos = want[:want.index("<start_of_turn>")]
            assert bos and "\n" not in bos and len(bos) < 16, bos
            want = want[len(bos):]
        assert mod.prompt_of("file", template) == want + start, template
