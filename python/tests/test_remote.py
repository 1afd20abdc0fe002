"""``sipllm_gguf.open(url)``: http(s):// and hf:// (through ``HF_ENDPOINT``) against a local
range server on 127.0.0.1 serving corpus files, read as the local files read; the errors the
CLI gives, as ``OSError`` subclasses with the remote error's code; ``GGUFReader(url)``
refused with an error naming ``sipllm_gguf.open``."""

from __future__ import annotations

import hashlib
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

import sipllm_gguf

from conftest import CORPUS, needs_corpus, write_with_gguf_py

TINY = "generated/tiny-llama.le.gguf"
VOCAB = "real/ggml-vocab-phi-3.gguf"


class _RangeHandler(BaseHTTPRequestHandler):
    """GET with ``Range: bytes=A-B`` (or ``A-``, ``-N``) → 206 and exactly those bytes."""

    protocol_version = "HTTP/1.1"
    # Bounded: a stalled client cannot hold a handler thread for long.
    timeout = 10

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        server: _Server = self.server  # type: ignore[assignment]
        rng = self.headers.get("Range")
        server.log.append((self.path, rng))
        body = server.files.get(self.path.partition("?")[0])
        if body is None:
            self._answer(404, b"not found", [])
            return
        n = len(body)
        if rng is None:
            self._answer(200, body, [])
            return
        spec = rng.strip().removeprefix("bytes=")
        a, _, b = spec.partition("-")
        if a == "":
            first, last = max(n - int(b), 0), n - 1
        else:
            first, last = int(a), min(int(b) if b else n - 1, n - 1)
        if first >= n or first > last:
            self._answer(416, b"", [("Content-Range", f"bytes */{n}")])
            return
        self._answer(206, body[first : last + 1], [("Content-Range", f"bytes {first}-{last}/{n}")])

    def _answer(self, code: int, payload: bytes, headers: list[tuple[str, str]]) -> None:
        self.send_response(code)
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("ETag", '"v1"')
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    files: dict[str, bytes]
    log: list[tuple[str, str | None]]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    needs_corpus()
    tiny = (CORPUS / TINY).read_bytes()
    files = {
        "/m/tiny-llama.gguf": tiny,
        "/m/phi-3.gguf": (CORPUS / VOCAB).read_bytes(),
        # hf://org/repo/sub/tiny-llama.gguf under HF_ENDPOINT.
        "/org/repo/resolve/main/sub/tiny-llama.gguf": tiny,
    }
    # Tensors past the 2 MiB block fetched at open, so reading them costs requests: a 4 MiB
    # pad, two adjacent 1 MiB tensors, a 4 MiB tail an over-long request would reach into.
    def build(w):
        w.add_tensor("pad", np.zeros(1 << 20, dtype=np.float32))
        w.add_tensor("a", np.arange(1 << 18, dtype=np.float32).reshape(256, 1024))
        w.add_tensor("b", -np.arange(1 << 18, dtype=np.float32).reshape(256, 1024))
        w.add_tensor("tail", np.ones(1 << 20, dtype=np.float32))

    big = tmp_path_factory.mktemp("remote") / "big.gguf"
    files["/m/big.gguf"] = write_with_gguf_py(big, build).read_bytes()
    srv = _Server(("127.0.0.1", 0), _RangeHandler)
    srv.files = files
    srv.log = []
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()
        thread.join(timeout=10)


def base(srv: _Server) -> str:
    host, port = srv.server_address[:2]
    return f"http://{host}:{port}"


def expected_hashes() -> dict[str, tuple[str, int]]:
    lines = (CORPUS / "generated/tiny-llama.le.tensors.sha256").read_text().splitlines()
    return {name: (digest, int(size)) for digest, size, name in (ln.split() for ln in lines)}


def check_every_tensor(remote: sipllm_gguf.Model) -> None:
    local = sipllm_gguf.open(CORPUS / TINY)
    hashes = expected_hashes()
    assert [t.name for t in remote.tensors] == [t.name for t in local.tensors]
    assert len(remote.tensors) == len(hashes)
    for t in remote.tensors:
        data = remote.read(t.name)
        assert (hashlib.sha256(data).hexdigest(), len(data)) == hashes[t.name], t.name
        assert data == local.read(t.name), t.name
        np.testing.assert_array_equal(remote.values(t.name), local.values(t.name))
    # Model.array: a copy of the tensor's bytes for a URL (there is no file to map).
    t = remote.tensors[0]
    np.testing.assert_array_equal(remote.array(t.name), local.array(t.name))


def test_http_url_reads_every_tensor_as_the_file(server):
    url = f"{base(server)}/m/tiny-llama.gguf"
    m = sipllm_gguf.open(url)
    assert m.path == url
    assert m.file_size == (CORPUS / TINY).stat().st_size
    check_every_tensor(m)
    assert all(path == "/m/tiny-llama.gguf" and rng for path, rng in server.log if path.startswith("/m/tiny"))


def test_http_url_of_a_real_vocabulary_has_its_metadata(server):
    m = sipllm_gguf.open(f"{base(server)}/m/phi-3.gguf")
    local = sipllm_gguf.open(CORPUS / VOCAB)
    assert list(m.metadata) == list(local.metadata)
    assert m.tokens is not None and local.tokens is not None
    assert m.tokens.to_list() == local.tokens.to_list()
    assert sipllm_gguf.validate(f"{base(server)}/m/phi-3.gguf") == sipllm_gguf.validate(CORPUS / VOCAB)


def asked_since(srv: _Server, since: int) -> list[int]:
    """The byte counts of the requests logged since ``since``."""
    out = []
    for _, rng in srv.log[since:]:
        a, _, b = rng.removeprefix("bytes=").partition("-")
        out.append(int(b) - int(a) + 1)
    return out


def test_reads_fetch_exactly_the_tensors_bytes(server):
    m = sipllm_gguf.open(f"{base(server)}/m/big.gguf")
    a, b = m.tensor("a"), m.tensor("b")
    for t, sign in ((a, 1), (b, -1)):
        # `b` follows `a` on: a guessed, doubled request would reach into the tail.
        since = len(server.log)
        values = m.values(t.name)
        np.testing.assert_array_equal(values.reshape(-1), sign * np.arange(1 << 18, dtype=np.float32))
        assert asked_since(server, since) == [t.nbytes]
    since = len(server.log)
    assert m.read("a") == np.arange(1 << 18, dtype=np.float32).tobytes()
    assert m.values_at("b", 1000, 3000).tolist() == (-np.arange(1000, 3000, dtype=np.float32)).tolist()
    assert m.read_at(b.offset + 4, 8) == (-np.arange(1, 3, dtype=np.float32)).tobytes()
    assert asked_since(server, since) == [a.nbytes, 2000 * 4, 8]


def test_hf_url_resolves_through_hf_endpoint(server, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", base(server))
    before = len(server.log)
    m = sipllm_gguf.open("hf://org/repo/sub/tiny-llama.gguf")
    assert m.path == "hf://org/repo/sub/tiny-llama.gguf"
    check_every_tensor(m)
    assert {p for p, _ in server.log[before:]} == {"/org/repo/resolve/main/sub/tiny-llama.gguf"}


def test_credentials_in_a_url_are_never_shown(server):
    # A presigned URL's signature is redacted wherever the URL is shown.
    url = f"{base(server)}/m/tiny-llama.gguf?X-Amz-Signature=hunter2"
    m = sipllm_gguf.open(url)
    assert m.path == f"{base(server)}/m/tiny-llama.gguf?X-Amz-Signature=REDACTED"
    assert "hunter2" not in repr(m)
    with pytest.raises(FileNotFoundError) as e:
        sipllm_gguf.open(url.replace("tiny-llama", "absent"))
    assert "hunter2" not in str(e.value) and "hunter2" not in e.value.url
    # User info is refused (as by the CLI), and not shown either.
    with pytest.raises(OSError) as e:
        sipllm_gguf.open(f"http://user:hunter2@{base(server).removeprefix('http://')}/m/x.gguf")
    assert e.value.code == "remote::url::bad_url" and "hunter2" not in str(e.value)


def test_remote_errors_are_oserrors_with_the_clis_codes(server, monkeypatch):
    with pytest.raises(FileNotFoundError) as e:
        sipllm_gguf.open(f"{base(server)}/m/absent.gguf")
    assert (e.value.code, e.value.status) == ("remote::http::status", 404)
    assert "check the URL" in e.value.help and "[remote::http::status]" in str(e.value)
    monkeypatch.setenv("HF_ENDPOINT", base(server))
    with pytest.raises(FileNotFoundError) as e:
        sipllm_gguf.open("hf://org/repo/missing.gguf")
    assert e.value.url.endswith("/org/repo/resolve/main/missing.gguf")
    with pytest.raises(OSError) as e:
        sipllm_gguf.open("hf://only-an-owner")
    assert e.value.code == "remote::url::bad_url"
    with pytest.raises(OSError) as e:
        sipllm_gguf.open("s3://bucket/model.gguf")
    assert e.value.code == "remote::url::unsupported_scheme"
    assert "object-store" in str(e.value)
    with pytest.raises(ConnectionError) as e:
        sipllm_gguf.open("http://127.0.0.1:9/nothing-listens-here.gguf")
    assert e.value.code == "remote::http::connect"


def test_gguf_reader_refuses_a_url_naming_open(server):
    url = f"{base(server)}/m/tiny-llama.gguf"
    with pytest.raises(sipllm_gguf.GGUFError) as e:
        sipllm_gguf.GGUFReader(url)
    assert "sipllm_gguf.open(" in str(e.value)
    assert e.value.code == "sipllm::python::reader_url"
    with pytest.raises(sipllm_gguf.GGUFError) as e:
        sipllm_gguf.GGUFReader("hf://org/repo/x.gguf")
    assert "sipllm_gguf.open" in str(e.value)
