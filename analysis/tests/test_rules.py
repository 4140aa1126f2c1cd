"""test_rules.py - the precision rules analysis/ repeats from kval's C sources agree with them:
the unit roundoffs (src/numerics/ulp.h's significand bits), and for 8-bit storage the output
type (src/core/dtype.c) and the tensor cores' kept accumulation bits (src/numerics/fp8.h)."""
import pathlib
import re

from kval_analysis import cases

TOP = pathlib.Path(__file__).resolve().parents[2]


def test_fp8_accumulation_bits_match_fp8_h():
    text = (TOP / "src/numerics/fp8.h").read_text()
    bits = int(re.search(r"#define KV_FP8_ACC_BITS (\d+)", text).group(1))
    assert cases.FP8_ACC_BITS == bits
    assert cases.accum_roundoff("e4m3:fp32") == 2.0**-bits
    assert cases.accum_roundoff("fp16:fp32") == 2.0**-24 and cases.accum_roundoff("bf16:bf16") == 2.0**-8


def test_output_type_matches_dtype_c():
    text = (TOP / "src/core/dtype.c").read_text()
    assert re.search(r"kv_precision_output\(kv_precision p\) \{ return kv_dtype_is_fp8\(p\.storage\) \? KV_BF16 : "
                     r"p\.storage; \}", text)
    assert "kv_dtype_is_fp8(kv_dtype t) { return t == KV_E4M3 || t == KV_E5M2; }" in text
    assert [cases.output_type(t) for t in ("fp16", "bf16", "fp32", "e4m3", "e5m2")] == \
        ["fp16", "bf16", "fp32", "bf16", "bf16"]


def test_unit_roundoffs_match_ulp_h():
    text = (TOP / "src/numerics/ulp.h").read_text()
    body = re.search(r"kv_type_precision\(kv_dtype t\) \{\s*return (.*?);", text, re.S).group(1)
    pairs = dict(re.findall(r"t == KV_(\w+) \? (\d+)", body))
    names = {"FP16": "fp16", "BF16": "bf16", "FP32": "fp32", "E4M3": "e4m3", "E5M2": "e5m2"}
    assert set(pairs) == set(names)
    for c_name, bits in pairs.items():
        assert cases.unit_roundoff(names[c_name]) == 2.0**-int(bits), c_name
