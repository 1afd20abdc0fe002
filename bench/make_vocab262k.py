"""A Gemma-3-sized vocabulary (262,144 tokens, scores, token types) as a header-only GGUF,
for timing `sipllm inspect --full` against `--json`: `python3 bench/make_vocab262k.py`
writes vocab262k.gguf in the current directory."""
import struct, random
n = 262144; random.seed(1)
def s(b): return struct.pack('<Q', len(b)) + b
def kv(k, t, v): return s(k.encode()) + struct.pack('<I', t) + v
toks = [('▁' if i % 3 == 0 else '') + ''.join(random.choice('abcdefghijklmnopqrstuvwxyz')
        for _ in range(random.randint(1, 12))) + str(i) for i in range(n)]
kvs = [kv('general.architecture', 8, s(b'gemma3')), kv('gemma3.block_count', 4, struct.pack('<I', 18)),
       kv('tokenizer.ggml.tokens', 9, struct.pack('<IQ', 8, n) + b''.join(s(t.encode()) for t in toks)),
       kv('tokenizer.ggml.scores', 9, struct.pack('<IQ', 6, n) + struct.pack('<%df' % n, *map(float, range(n)))),
       kv('tokenizer.ggml.token_type', 9, struct.pack('<IQ', 5, n) + struct.pack('<%di' % n, *[1] * n))]
hdr = b'GGUF' + struct.pack('<IQQ', 3, 0, len(kvs)) + b''.join(kvs)
open('vocab262k.gguf', 'wb').write(hdr + b'\0' * (-len(hdr) % 32))
