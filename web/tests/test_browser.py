#!/usr/bin/env python3
"""The browser tests of the GGUF inspector page (docs/web.md), in headless Chromium.

`sipllm web --port 0 --no-open` serves the page; Playwright for Python drives Debian's
Chromium (/usr/bin/chromium, never a downloaded browser). What the page shows is checked
against the `sipllm` command on the same files (`inspect --json --array-limit 8`,
`validate --format json`), and what it read against the file and against the log of a
range server:

* a real model file (../shared/corpus/real/) through the file input: the same document as
  `sipllm inspect --json`, the same findings as `sipllm validate`;
* the Llama-3-shaped 4.9 GB sparse file (../shared/bench/make_llama3_like.py) through the
  file input: only the header is read (bytes counted by the page's reader);
* URLs through `?url=` against a local range server that logs every request: the
  architecture, tensor count and vocabulary size shown, at most twice the header's bytes
  fetched;
* a malformed file: its finding, drawn over the hex window.

    python3 web/tests/test_browser.py                      # the tests
    python3 web/tests/test_browser.py --bench [N]          # open time of the Llama-3 header
    python3 web/tests/test_browser.py --screenshot OUT.png # the page, for a person to look at

Needs: `cargo build -p sipllm-cli` (or SIPLLM_BIN), `pip install playwright gguf`, and
Debian's chromium. Without ../shared/corpus the corpus tests are skipped, loudly; with
SIPLLM_REQUIRE_CORPUS=1 (CI) they fail instead.
"""
from __future__ import annotations

import http.server
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("SIPLLM_SHARED", ROOT.parent / "shared"))
CORPUS = SHARED / "corpus" / "real"
REAL = CORPUS / "ggml-vocab-llama-spm.gguf"
MAKE_LLAMA3 = SHARED / "bench" / "make_llama3_like.py"
CHROMIUM = os.environ.get("SIPLLM_CHROMIUM", "/usr/bin/chromium")
# The flags this machine's closed network needs (no background connections, no QUIC).
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
ARRAY_LIMIT = 8  # the page's (app.js)
WAIT_MS = 120_000


def sipllm_bin() -> Path:
    if "SIPLLM_BIN" in os.environ:
        return Path(os.environ["SIPLLM_BIN"])
    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
    return target / "debug" / "sipllm"


def sipllm(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(sipllm_bin()), *args], capture_output=True, text=True, timeout=300)


def require_corpus() -> None:
    if not REAL.exists():
        why = f"{CORPUS} not found beside the checkout"
        if os.environ.get("SIPLLM_REQUIRE_CORPUS") == "1":
            raise AssertionError(f"{why} (SIPLLM_REQUIRE_CORPUS=1)")
        raise unittest.SkipTest(why)


class RangeServer:
    """Serves a directory over HTTP range requests with CORS on 127.0.0.1, logging every
    request: (method, path, first byte, last byte, bytes sent)."""

    def __init__(self, root: Path):
        log = self.log = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_OPTIONS(self):
                log.append(("OPTIONS", self.path, None, None, 0))
                self.send_response(204)
                self.send_header("Access-Control-Allow-Origin", "*")
                self.send_header("Access-Control-Allow-Headers", "Range")
                self.send_header("Access-Control-Allow-Methods", "GET, HEAD")
                self.end_headers()

            def do_GET(self):
                path = root / self.path.lstrip("/").split("?")[0]
                if not path.is_file():
                    self.send_error(404)
                    return
                size = path.stat().st_size
                m = re.fullmatch(r"bytes=(\d+)-(\d+)", self.headers.get("Range", ""))
                if not m or int(m.group(1)) >= size:
                    log.append(("GET", self.path, None, None, 0))
                    self.send_error(416)
                    return
                start, end = int(m.group(1)), min(int(m.group(2)), size - 1)
                with open(path, "rb") as f:
                    f.seek(start)
                    body = f.read(end - start + 1)
                log.append(("GET", self.path, start, end, len(body)))
                self.send_response(206)
                self.send_header("Access-Control-Allow-Origin", "*")
                self.send_header("Access-Control-Expose-Headers", "Content-Range")
                self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Content-Type", "application/octet-stream")
                self.end_headers()
                self.wfile.write(body)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def bytes_sent(self, name: str) -> tuple[int, int]:
        gets = [e for e in self.log if e[0] == "GET" and e[1] == f"/{name}"]
        return len(gets), sum(e[4] for e in gets)

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


class Page:
    """`sipllm web` and one headless Chromium page on it."""

    def __init__(self):
        from playwright.sync_api import sync_playwright

        self.server = subprocess.Popen(
            [str(sipllm_bin()), "web", "--port", "0", "--no-open"],
            stdout=subprocess.PIPE, text=True,
        )
        line = self.server.stdout.readline()
        m = re.search(r"(http://127\.0\.0\.1:\d+/)", line)
        if not m:
            self.server.kill()
            raise AssertionError(f"sipllm web printed no address: {line!r}")
        self.url = m.group(1)
        self.pw = sync_playwright().start()
        # Playwright starts Chromium with a new empty profile of its own (--user-data-dir).
        self.browser = self.pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        self.page = self.browser.new_page(viewport={"width": 1200, "height": 900})
        self.errors: list[str] = []
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))

    def goto(self, query: str = "") -> None:
        self.page.goto(self.url + query)

    def wait_done(self) -> dict:
        # Selectors, not wait_for_function: that evaluates a string, which the page's
        # Content-Security-Policy (rightly) refuses.
        self.page.wait_for_selector(
            "body[data-state=done], body[data-state=error]", state="attached", timeout=WAIT_MS)
        return self.page.evaluate("window.sipllmResult")

    def open_file(self, path: Path) -> dict:
        self.goto()
        self.page.wait_for_selector("body[data-state=idle]", state="attached", timeout=WAIT_MS)
        self.page.set_input_files("#file", str(path))
        return self.wait_done()

    def text(self, selector: str) -> str:
        return self.page.inner_text(selector)

    def close(self):
        self.browser.close()
        self.pw.stop()
        self.server.terminate()
        self.server.wait(timeout=30)


def make_llama3(dir: Path) -> tuple[Path, int]:
    """The Llama-3-8B-shaped file (a 7.7 MB header, 4.9 GB of sparse tensor data)."""
    out = dir / "llama3-like.gguf"
    subprocess.run([sys.executable, str(MAKE_LLAMA3), str(out)], check=True,
                   capture_output=True, timeout=600)
    doc = json.loads(sipllm("inspect", "--json", "--no-arrays", "--no-tensors", str(out)).stdout)
    return out, doc["data_offset"]


class BrowserTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = Path(tempfile.mkdtemp(prefix="sipllm-web-test-"))
        cls.page = Page()
        cls.ranges = RangeServer(cls.tmp)

    @classmethod
    def tearDownClass(cls):
        cls.page.close()
        cls.ranges.close()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def tearDown(self):
        self.assertEqual(self.page.errors, [], "errors in the page")

    def llama3(self) -> tuple[Path, int]:
        cls = type(self)
        if not hasattr(cls, "_llama3"):
            require_corpus()  # the generator lives beside the corpus, in ../shared
            cls._llama3 = make_llama3(self.tmp)
        return cls._llama3

    def assert_same_as_cli(self, path: Path, result: dict):
        report = json.loads(result["report"])
        cli = sipllm("inspect", "--json", "--array-limit", str(ARRAY_LIMIT), str(path))
        self.assertEqual(cli.returncode, 0, cli.stderr)
        expected = json.loads(cli.stdout)
        # The page leaves out the arrays' payload_sha256 (ArrayMode::Preview): all else is equal.
        for entry in expected["metadata"]:
            self.assertEqual(entry.pop("payload_sha256", None) is not None, entry["type"] == "ARRAY")
        self.assertEqual(report["inspect"], expected, "the page's document is not the CLI's")
        validate = sipllm("validate", "--format", "json", str(path))
        codes = [json.loads(line)["code"] for line in validate.stdout.splitlines()]
        self.assertEqual([f["code"] for f in report["validate"]["findings"]], codes)
        return report

    def test_real_model_through_the_file_input(self):
        require_corpus()
        result = self.page.open_file(REAL)
        self.assertNotIn("error", result, result.get("error"))
        report = self.assert_same_as_cli(REAL, result)
        expect = json.loads((CORPUS / "ggml-vocab-llama-spm.expect.json").read_text())
        arch = next(iter(expect.get("fields", {}).get("general.architecture", {}).values()), None) \
            if isinstance(expect.get("fields"), dict) else None
        shown = self.page.text("#architecture")
        self.assertEqual(shown, report["inspect"]["summary"]["architecture"])
        if isinstance(arch, str):
            self.assertEqual(shown, arch)
        self.assertEqual(self.page.text("#tensor-count"), str(report["inspect"]["tensor_count"]))
        vocab = report["inspect"]["summary"]["hyperparameters"]["vocab_size"]
        self.assertEqual(self.page.text("#vocab-size"), f"{vocab:,}")
        self.assertIn("✓ valid", self.page.text("#verdict"))
        # Metadata arrays are previewed: the token list shows its length and first elements.
        self.assertRegex(self.page.text("#metadata"), r"\[32,000 × STRING\] \"<unk>\"")

    def test_a_multi_gb_sparse_file_is_read_header_only(self):
        path, data_offset = self.llama3()
        size = path.stat().st_size
        self.assertGreater(size, 4 << 30)
        result = self.page.open_file(path)
        self.assertNotIn("error", result, result.get("error"))
        self.assert_same_as_cli(path, result)
        # What the page's reader read (FileReaderSync over Blob.slice): the header, with the
        # read-ahead's slack (less than twice), never the tensor data.
        self.assertGreaterEqual(result["bytes"], data_offset)
        self.assertLessEqual(result["bytes"], 2 * data_offset)
        self.assertLess(result["reads"], 16)
        self.assertEqual(self.page.text("#architecture"), "llama")
        self.assertEqual(self.page.text("#tensor-count"), "291")
        self.assertEqual(self.page.text("#vocab-size"), "128,256")
        # The tensor table filters like --filter.
        self.page.page.fill("#tensor-filter", "blk.0.*")
        self.assertEqual(self.page.text("#tensors-count"), "(9 of 291)")

    def test_a_url_through_the_query_reads_at_most_twice_the_header(self):
        path, data_offset = self.llama3()
        os.link(path, self.tmp / "served.gguf")
        self.page.goto(f"?url={self.ranges.url}/served.gguf")
        result = self.page.wait_done()
        self.assertNotIn("error", result, result.get("error"))
        self.assertEqual(self.page.text("#architecture"), "llama")
        self.assertEqual(self.page.text("#tensor-count"), "291")
        self.assertEqual(self.page.text("#vocab-size"), "128,256")
        requests, sent = self.ranges.bytes_sent("served.gguf")
        self.assertLessEqual(sent, 2 * data_offset, f"{requests} requests")
        self.assertGreaterEqual(sent, data_offset)
        self.assertEqual((requests, sent), (result["reads"], result["bytes"]))

    def test_a_real_model_by_url(self):
        require_corpus()
        shutil.copy(REAL, self.tmp / "real.gguf")
        self.page.goto(f"?url={self.ranges.url}/real.gguf")
        result = self.page.wait_done()
        self.assertNotIn("error", result, result.get("error"))
        report = self.assert_same_as_cli(REAL, result)
        self.assertEqual(self.page.text("#architecture"), report["inspect"]["summary"]["architecture"])
        requests, sent = self.ranges.bytes_sent("real.gguf")
        self.assertLessEqual(sent, 2 * report["inspect"]["data_offset"])

    def test_a_malformed_file_shows_its_finding(self):
        require_corpus()
        bad = self.tmp / "bad-version.gguf"
        data = bytearray(REAL.read_bytes())
        data[4:8] = (9).to_bytes(4, "little")  # GGUF version 9
        bad.write_bytes(bytes(data))
        result = self.page.open_file(bad)
        self.assertNotIn("error", result, result.get("error"))
        report = json.loads(result["report"])
        validate = sipllm("validate", "--format", "json", str(bad))
        self.assertEqual(validate.returncode, 1)
        cli = [json.loads(line) for line in validate.stdout.splitlines()]
        page = report["validate"]["findings"]
        self.assertEqual([(f["code"], f["offset"], f["length"]) for f in page],
                         [(f["code"], f["offset"], f["length"]) for f in cli])
        self.assertIn("✗ invalid", self.page.text("#verdict"))
        shown = self.page.text("#findings")
        self.assertIn("gguf::header::unsupported_version", shown)
        # The hex window over the version field.
        self.assertIn("0x00000000  47 47 55 46 09 00 00 00", shown)


def bench(runs: int) -> None:
    """Opens the Llama-3-shaped file `runs` times through the file input; prints the times."""
    tmp = Path(tempfile.mkdtemp(prefix="sipllm-web-bench-"))
    page = Page()
    try:
        path, _ = make_llama3(tmp)
        times = []
        reading = []
        for _ in range(runs):
            result = page.open_file(path)
            assert "error" not in result, result
            times.append(result["ms"])
            reading.append(result["readMs"])
        print(f"open of the Llama-3-shaped header ({result['bytes']:,} bytes in "
              f"{result['reads']} reads) in headless Chromium, {runs} runs: "
              f"median {statistics.median(times):.1f} ms, min {min(times):.1f} ms, "
              f"max {max(times):.1f} ms; of which reading (FileReaderSync): median "
              f"{statistics.median(reading):.1f} ms")
    finally:
        page.close()
        shutil.rmtree(tmp, ignore_errors=True)


def screenshot(out: str) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="sipllm-web-shot-"))
    page = Page()
    try:
        path, _ = make_llama3(tmp)
        page.open_file(path)
        page.page.screenshot(path=out, full_page=False)
        print(f"wrote {out}")
    finally:
        page.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--bench":
        bench(int(sys.argv[2]) if len(sys.argv) > 2 else 10)
    elif len(sys.argv) > 2 and sys.argv[1] == "--screenshot":
        screenshot(sys.argv[2])
    else:
        unittest.main(verbosity=2)
