"""``validate(path, model=True)`` and ``Model.load_check()``: llama.cpp's own verdicts.

The golden files (``shared/goldens/llamacpp/load/``) are header-only; llama.cpp judged them
extended to ``full_size`` with zeros, so each is copied and extended (a sparse file) first."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

import sipllm_gguf
from conftest import SHARED

GOLDENS = SHARED / "goldens" / "llamacpp"


def _verdicts() -> list[dict]:
    path = GOLDENS / "load" / "verdicts.json"
    if not path.is_file():
        return []
    return json.loads(path.read_text())


def _full(tmp: Path, src: Path, size: int) -> Path:
    dst = tmp / src.name
    shutil.copyfile(src, dst)
    os.truncate(dst, size)
    return dst


def test_every_golden_verdict(tmp_path: Path) -> None:
    verdicts = _verdicts()
    if not verdicts:
        pytest.skip(f"{GOLDENS} ABSENT (set SIPLLM_SHARED)")
    wrong = []
    crashes_named = 0
    for v in verdicts:
        path = _full(tmp_path, GOLDENS / "load" / v["file"], v["full_size"])
        findings = sipllm_gguf.validate(path, profile="llama-cpp", model=True)
        loads = not any(f.severity == "error" for f in findings)
        if loads != v["ok"]:
            wrong.append((v["file"], v["ok"], [f.code for f in findings]))
        if v.get("crash") and any(f.code in ("model::load::llama_cpp_crashes", "model::load::block_count") for f in findings):
            crashes_named += 1
        path.unlink()
    assert wrong == []
    assert crashes_named == sum(1 for v in verdicts if v.get("crash"))


def test_load_check_report(tmp_path: Path) -> None:
    verdicts = {v["file"]: v for v in _verdicts()}
    name = "arcee-dense__e_blk0_main_ne1x2.gguf"
    if name not in verdicts:
        pytest.skip(f"{GOLDENS} ABSENT (set SIPLLM_SHARED)")
    path = _full(tmp_path, GOLDENS / "load" / name, verdicts[name]["full_size"])
    report = sipllm_gguf.open(path).load_check()
    assert (report.arch, report.known_arch, report.loads, report.crashes) == ("arcee", True, False, False)
    shape = report.findings[0]
    assert shape.code == "model::load::tensor_shape" and shape.severity == "error"
    assert "[256, 512]" in shape.message and "[256, 256]" in shape.message
    assert shape.path == 'tensor[4] "blk.0.attn_q.weight"' and shape.offset is not None
    assert "check_tensor_dims" in shape.help
    # Without model=True, validate checks the container only: the file is a valid GGUF.
    assert [f for f in sipllm_gguf.validate(path) if f.severity == "error"] == []


def test_a_header_only_file_stops_at_the_container(tmp_path: Path) -> None:
    src = GOLDENS / "archs" / "llama-dense.gguf"
    if not src.is_file():
        pytest.skip(f"{GOLDENS} ABSENT (set SIPLLM_SHARED)")
    findings = sipllm_gguf.validate(src, model=True)
    assert findings[-1].code == "gguf::layout::out_of_bounds"
    assert not any(f.code.startswith("model::load::") for f in findings)
