"""`nucleus bench` prints what bench/speed.py parses: one 'ppN V tok/s' and
one 'tgN V tok/s' line, with positive values for the sizes asked for."""

import importlib.util
import subprocess

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
