"""``Model.fit``: the memory llama.cpp would allocate, against llama.cpp's own breakdown
(``goldens/llamacpp/archs.json``: the tiny models restored to full size as sparse files)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import sipllm_gguf
from conftest import REPO, SHARED

GOLDENS = SHARED / "goldens" / "llamacpp"
SAMPLE = REPO / "samples" / "tiny-llama.gguf"


def test_fields_and_profiles() -> None:
    m = sipllm_gguf.open(SAMPLE)
    f = m.fit("libllama", n_ctx=1000, flash_attn="on")
    assert f is not None
    for key in ("n_ctx", "kv_bytes", "recurrent_bytes", "output_bytes", "model_bytes", "compute_bytes", "devices", "total_bytes"):
        assert key in f
    assert f["n_ctx"] == 1024  # padded to 256 cells
    assert f["n_seq_max"] == 1 and f["swa_full"] is True
    assert f["total_bytes"] == sum(d["total_bytes"] for d in f["devices"])
    assert set(f["compute_bytes"]) == {"cpu"}
    # Twice the context, twice the KV cache.
    assert m.fit("libllama", n_ctx=2048)["kv_bytes"] == 2 * f["kv_bytes"]
    server = m.fit()
    assert server["n_seq_max"] == 4 and server["kv_unified"] is True


def test_refusals_raise_with_their_code() -> None:
    m = sipllm_gguf.open(SAMPLE)
    with pytest.raises(ValueError, match="model::fit::needs_flash_attn"):
        m.fit(type_v="q8_0", flash_attn="off")
    with pytest.raises(ValueError, match="unsupported cache type"):
        m.fit(type_k="q4_K")
    with pytest.raises(ValueError, match="unknown profile"):
        m.fit("vllm")


def test_memory_gives_the_largest_context() -> None:
    m = sipllm_gguf.open(SAMPLE)
    one = m.fit("libllama", n_ctx=256)
    budget = one["total_bytes"] + 3 * (m.fit("libllama", n_ctx=512)["total_bytes"] - one["total_bytes"])
    best = m.fit("libllama", memory=budget)
    assert best is not None and best["total_bytes"] <= budget
    assert m.fit("libllama", n_ctx=best["n_ctx"] + 256)["total_bytes"] > budget
    assert m.fit("libllama", memory=1) is None


@pytest.mark.skipif(not GOLDENS.is_dir(), reason=f"{GOLDENS} is absent (set SIPLLM_SHARED)")
@pytest.mark.parametrize("arch", ["llama", "gemma2", "mamba2", "qwen35"])
def test_matches_llama_cpp(arch: str, tmp_path: Path) -> None:
    entries = [e for e in json.loads((GOLDENS / "archs.json").read_text()) if e["arch"] == arch]
    e = entries[0]
    path = tmp_path / e["file"]
    shutil.copyfile(GOLDENS / "archs" / e["file"], path)
    with open(path, "r+b") as f:
        f.truncate(e["full_size"])  # sparse: the tensor data llama.cpp needed, as zeros
    want = e["load_n_ctx_256"]["bufs"][0]
    got = sipllm_gguf.open(path).fit("libllama", n_ctx=256, flash_attn="on", swa_full=False)
    assert got["kv_bytes"] + got["recurrent_bytes"] == want["context"]
    assert got["model_bytes"] == want["model"]
