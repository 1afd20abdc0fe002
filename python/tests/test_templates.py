"""Chat templates: ``sipllm_gguf.render_chat``, ``Model.chat_template(s)``."""

from __future__ import annotations

from pathlib import Path

import pytest

import sipllm_gguf
from conftest import write_with_gguf_py

TEMPLATE = (
    "{{ bos_token }}{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}{{ eos_token }}"
)


def _model(tmp_path: Path, gguf_py) -> sipllm_gguf.Model:
    def build(w) -> None:
        w.add_token_list(["<unk>", "<|begin|>", "<|end|>"])
        w.add_bos_token_id(1)
        w.add_eos_token_id(2)
        w.add_chat_template(TEMPLATE)
        w.add_string("tokenizer.chat_template.tool_use", "{{ tools|tojson }}")

    return sipllm_gguf.open(write_with_gguf_py(tmp_path / "chat.gguf", build))


def test_a_models_templates_by_name(tmp_path: Path, gguf_py) -> None:
    model = _model(tmp_path, gguf_py)
    assert model.chat_template == TEMPLATE
    assert model.chat_templates == {"default": TEMPLATE, "tool_use": "{{ tools|tojson }}"}


def test_render_chat_from_a_model_uses_its_special_tokens(tmp_path: Path, gguf_py) -> None:
    model = _model(tmp_path, gguf_py)
    messages = [{"role": "user", "content": "Hi"}]
    out = sipllm_gguf.render_chat(model, messages, add_generation_prompt=True)
    assert out == "<|begin|><|user|>Hi<|assistant|><|end|>"
    assert sipllm_gguf.render_chat(model, messages, bos_token="") == "<|user|>Hi<|end|>"


def test_render_chat_from_text_with_tools_and_variables() -> None:
    tools = [{"name": "f", "z": 1, "a": None}]
    out = sipllm_gguf.render_chat(
        "{{ tools|tojson }}|{{ flag }}|{{ messages[0].content }}",
        [{"role": "user", "content": None}],
        tools=tools,
        flag=False,
    )
    # Python's spelling (None, False) and json.dumps' separators, keys in the given order.
    assert out == '[{"name": "f", "z": 1, "a": null}]|False|None'


def test_template_errors_carry_their_code() -> None:
    with pytest.raises(sipllm_gguf.GGUFError) as e:
        sipllm_gguf.render_chat("{{ raise_exception('no system role') }}", [])
    assert e.value.code == "model::template::raised"
    assert "no system role" in str(e.value)
    with pytest.raises(sipllm_gguf.GGUFError) as e:
        sipllm_gguf.render_chat("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", [])
    assert e.value.code == "model::template::out_of_fuel"
