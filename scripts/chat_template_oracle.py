#!/usr/bin/env python3
"""The reference renderer of chat templates: Python Jinja2 configured exactly as
transformers' `_compile_jinja_template` configures it (transformers 4.4x,
`utils/chat_template_utils.py`), without transformers itself.

Reads cases as JSON lines on standard input (the format of `sipllm template render
--batch`): `template` or `template_file`, `messages`, `tools`, `add_generation_prompt`,
`bos_token`, `eos_token`, `now` (`YYYY-MM-DDTHH:MM:SS`, the clock `strftime_now` reads).
Writes one JSON line per case, in order: `{"ok": "<rendered>"}` or
`{"err": {"code": "python::<exception class>", "message": "..."}}`.

Needs `jinja2` (3.1.6 is the version the parity figures in docs/templates.md were measured
with: `pip install jinja2==3.1.6`).
"""

import json
import signal
import sys
from datetime import datetime

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension
from jinja2.sandbox import ImmutableSandboxedEnvironment

# The clock of the case being rendered (strftime_now reads it).
NOW = [datetime(2026, 12, 4, 12, 0, 0)]


class AssistantTracker(Extension):
    """transformers' `{% generation %}` block: renders its body (the tracking of the
    assistant's token spans is left out; it does not change the text)."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return nodes.CallBlock(self.call_method("_generation_support"), [], [], body).set_lineno(lineno)

    @jinja2.pass_eval_context
    def _generation_support(self, context, caller):
        return caller()


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    # transformers' own: no HTML escaping, Python's separators.
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def strftime_now(format):
    return NOW[0].strftime(format)


def environment():
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[AssistantTracker, jinja2.ext.loopcontrols]
    )
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


class Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise Timeout("render took longer than 10 s")


def main():
    env = environment()
    compiled = {}
    signal.signal(signal.SIGALRM, _alarm)
    out = sys.stdout
    for line in sys.stdin:
        if not line.strip():
            continue
        case = json.loads(line)
        try:
            if "template_file" in case:
                key = ("file", case["template_file"])
                if key not in compiled:
                    with open(case["template_file"], encoding="utf-8") as f:
                        compiled[key] = _compile(env, f.read())
            else:
                key = ("text", case["template"])
                if key not in compiled:
                    compiled[key] = _compile(env, case["template"])
            template = compiled[key]
            if isinstance(template, Exception):
                raise template
            now = case.get("now")
            NOW[0] = datetime.fromisoformat(now) if now else datetime(2026, 12, 4, 12, 0, 0)
            kwargs = {
                "messages": case["messages"],
                "add_generation_prompt": bool(case.get("add_generation_prompt", False)),
                "bos_token": case.get("bos_token", "<s>"),
                "eos_token": case.get("eos_token", "</s>"),
            }
            if case.get("tools") is not None:
                kwargs["tools"] = case["tools"]
            for k, v in (case.get("vars") or {}).items():
                kwargs.setdefault(k, v)
            signal.alarm(10)
            try:
                result = {"ok": template.render(**kwargs)}
            finally:
                signal.alarm(0)
        except Exception as e:  # every failure is a result, in order
            result = {"err": {"code": "python::" + type(e).__name__, "message": str(e)[:500]}}
        out.write(json.dumps(result, ensure_ascii=False) + "\n")
    out.flush()


def _compile(env, text):
    try:
        return env.from_string(text)
    except Exception as e:
        return e


if __name__ == "__main__":
    main()
