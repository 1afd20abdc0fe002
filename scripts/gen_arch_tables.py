#!/usr/bin/env python3
"""Generate crates/model/src/arch/tables.rs: what llama.cpp's loader requires of each architecture.

Reads llama.cpp's source (the tree vendored in the PyPI sdist of llama-cpp-python 0.3.36, llama.cpp
commit 0c1e570; only READ, nothing of it is copied) and the 128 tiny per-architecture models of
../shared/goldens/llamacpp/archs/ (written by llama.cpp's own test generator), and writes the
project's own table:

- the architecture names (llama-arch.cpp, LLM_ARCH_NAMES);
- per architecture, the hyperparameter keys `load_arch_hparams` reads unconditionally with
  `ml.get_key(LLM_KV_..., field)` (required unless a trailing `false`), with the GGUF type the
  field's C++ type demands;
- per architecture, every `create_tensor(tn(LLM_TENSOR_..., suffix[, i]), {dims}, flags)` call of
  `load_arch_tensors` (helpers `create_tensor_qkv` / `create_tensor_gate_up_exps` expanded as
  llama-model.cpp defines them), the dims rewritten as expressions over the hyperparameters the
  Rust side evaluates (crates/model/src/arch/expr.rs), local `const` definitions substituted;
- which of those tensors the loader creates for the test model's hyperparameters (the tensors the
  tiny model holds): those whose call is not TENSOR_NOT_REQUIRED are the required ones, and for
  them the call whose dims evaluate to the test model's shape is recorded.

Usage: scripts/gen_arch_tables.py LLAMA_CPP_SRC_DIR GOLDENS_ARCHS_DIR > crates/model/src/arch/tables.rs
"""
import os
import re
import struct
import sys

# ---------------------------------------------------------------- GGUF header reader (tiny)
GT = {0: 'B', 1: 'b', 2: 'H', 3: 'h', 4: 'I', 5: 'i', 6: 'f', 7: '?', 10: 'Q', 11: 'q', 12: 'd'}


def read_gguf(path):
    b = open(path, 'rb').read()
    p = [4]

    def u(fmt):
        v = struct.unpack_from('<' + fmt, b, p[0])
        p[0] += struct.calcsize(fmt)
        return v[0]

    def s():
        n = u('Q')
        v = b[p[0]:p[0] + n].decode('utf-8', 'replace')
        p[0] += n
        return v

    def val(t):
        if t == 8:
            return s()
        if t == 9:
            et = u('I')
            n = u('Q')
            return [val(et) for _ in range(n)]
        return u(GT[t])

    u('I')
    nt = u('Q')
    nk = u('Q')
    kv = {}
    for _ in range(nk):
        k = s()
        t = u('I')
        kv[k] = val(t)
    ts = []
    for _ in range(nt):
        n = s()
        nd = u('I')
        dims = [u('Q') for _ in range(nd)]
        u('I')
        u('Q')
        ts.append((n, dims))
    return kv, ts


# ---------------------------------------------------------------- expressions
TOK = re.compile(r'\s*(?:(\d+)[uUlL]*|([A-Za-z_][A-Za-z_0-9]*(?:(?:\.|::|->)[A-Za-z_][A-Za-z_0-9]*)*)|(==|!=|>=|<=|&&|\|\||[-+*/%()?:<>,!]))')


class Unsupported(Exception):
    pass


def tokenize(s):
    out, pos = [], 0
    s = s.strip()
    while pos < len(s):
        m = TOK.match(s, pos)
        if not m or m.end() == pos:
            raise Unsupported('token at ' + s[pos:])
        if m.group(1):
            out.append(('num', int(m.group(1))))
        elif m.group(2):
            out.append(('id', m.group(2)))
        else:
            out.append(('op', m.group(3)))
        pos = m.end()
    return out


class P:
    def __init__(self, toks):
        self.t, self.i = toks, 0

    def peek(self):
        return self.t[self.i] if self.i < len(self.t) else (None, None)

    def take(self, op=None):
        tok = self.peek()
        if op is not None and tok != ('op', op):
            raise Unsupported('expected ' + op)
        self.i += 1
        return tok

    def expr(self):
        c = self.binop(0)
        if self.peek() == ('op', '?'):
            self.take()
            a = self.expr()
            self.take(':')
            b = self.expr()
            return ('?', c, a, b)
        return c

    PREC = [['||'], ['&&'], ['==', '!='], ['<', '>', '<=', '>='], ['+', '-'], ['*', '/', '%']]

    def binop(self, lvl):
        if lvl == len(self.PREC):
            return self.unary()
        left = self.binop(lvl + 1)
        while self.peek()[0] == 'op' and self.peek()[1] in self.PREC[lvl]:
            op = self.take()[1]
            right = self.binop(lvl + 1)
            left = (op, left, right)
        return left

    def unary(self):
        k, v = self.peek()
        if (k, v) == ('op', '('):
            self.take()
            # a C cast: (int64_t) x
            if self.peek()[0] == 'id' and self.peek()[1] in CASTS and self.t[self.i + 1] == ('op', ')'):
                self.take()
                self.take(')')
                return self.unary()
            e = self.expr()
            self.take(')')
            return e
        if (k, v) == ('op', '-'):
            self.take()
            return ('-', ('num', 0), self.unary())
        if k == 'num':
            self.take()
            return ('num', v)
        if k == 'id':
            self.take()
            if self.peek() == ('op', '('):
                self.take()
                args = []
                while self.peek() != ('op', ')'):
                    args.append(self.expr())
                    if self.peek() == ('op', ','):
                        self.take()
                self.take(')')
                return ('call', v, args)
            return ('id', v)
        raise Unsupported('unexpected %r' % (v,))


CASTS = {'int64_t', 'uint32_t', 'int32_t', 'int', 'uint64_t', 'size_t', 'float'}


def parse(s):
    p = P(tokenize(s))
    e = p.expr()
    if p.i != len(p.t):
        raise Unsupported('trailing in ' + s)
    return e


# Names the Rust evaluator knows (crates/model/src/arch/expr.rs); per-layer ones take the layer.
BASE = {
    'n_embd', 'n_vocab', 'n_layer', 'n_layer_all', 'n_head', 'n_head_kv', 'n_ff', 'n_ff_exp',
    'n_embd_head_k', 'n_embd_head_v', 'n_embd_k_gqa', 'n_embd_v_gqa', 'n_rot', 'n_expert',
    'n_expert_used', 'n_ctx_train', 'n_token_types', 'i', 'n_embd_head_k_mla', 'n_embd_head_v_mla',
}
LOCAL_ALIASES = {'n_embd_gqa': 'n_embd_v_gqa'}
HP_FUNCS = {'n_head', 'n_head_kv', 'n_ff', 'n_ff_exp', 'n_embd_head_k', 'n_embd_head_v',
            'n_embd_k_gqa', 'n_embd_v_gqa', 'n_rot', 'n_expert_used', 'n_layer',
            'n_embd_head_k_mla', 'n_embd_head_v_mla'}


def normalize(e, locals_, fields, depth=0):
    """Rewrites an expression AST to BASE names and `kv:<key>` fields; raises Unsupported."""
    if depth > 20:
        raise Unsupported('deep')
    t = e[0]
    if t == 'num':
        return e
    if t == 'id':
        name = e[1]
        if name.startswith('hparams.'):
            f = name[len('hparams.'):]
            if f in ('n_embd', 'n_layer_all', 'n_expert', 'n_ctx_train'):
                return ('id', f)
            if f in fields:
                return ('id', 'kv:' + fields[f])
            raise Unsupported('field ' + f)
        if name in LOCAL_ALIASES:
            return ('id', LOCAL_ALIASES[name])
        if name in locals_:
            return normalize(locals_[name], locals_, fields, depth + 1)
        if name in BASE:
            return e
        raise Unsupported('name ' + name)
    if t == 'call':
        fn = e[1]
        if fn.startswith('hparams.') and fn[len('hparams.'):] in HP_FUNCS:
            return ('id', fn[len('hparams.'):])
        if fn in ('std::max', 'std::min') and len(e[2]) == 2:
            return ('call', fn[5:], [normalize(a, locals_, fields, depth + 1) for a in e[2]])
        raise Unsupported('call ' + fn)
    if t == '?':
        return ('?',) + tuple(normalize(x, locals_, fields, depth + 1) for x in e[1:])
    return (t,) + tuple(normalize(x, locals_, fields, depth + 1) for x in e[1:])


def show(e):
    t = e[0]
    if t == 'num':
        return str(e[1])
    if t == 'id':
        return e[1]
    if t == 'call':
        return '%s(%s)' % (e[1], ', '.join(show(a) for a in e[2]))
    if t == '?':
        return '(%s ? %s : %s)' % (show(e[1]), show(e[2]), show(e[3]))
    return '(%s %s %s)' % (show(e[1]), t, show(e[2]))


class Env:
    """llama.cpp's hparams for one file, as the Rust side computes them (kept in step with
    crates/model/src/arch/expr.rs)."""

    def __init__(self, arch, kv, field_defaults):
        self.arch, self.kv, self.defaults = arch, kv, field_defaults

    def key(self, k, default=None):
        v = self.kv.get(self.arch + '.' + k)
        return default if v is None else v

    def per_layer(self, k, il, default):
        v = self.key(k, default)
        if isinstance(v, list):
            return v[il] if il < len(v) else 0
        return v

    def get(self, name, il):
        n_embd = self.key('embedding_length', 0)
        n_head = self.per_layer('attention.head_count', il, 0)
        if name == 'n_embd':
            return n_embd
        if name == 'n_vocab':
            return len(self.kv.get('tokenizer.ggml.tokens', []))
        if name == 'n_layer_all':
            return self.key('block_count', 0)
        if name == 'n_layer':
            return self.key('block_count', 0) - self.key('nextn_predict_layers', 0)
        if name == 'n_head':
            return n_head
        if name == 'n_head_kv':
            return self.per_layer('attention.head_count_kv', il, n_head)
        if name == 'n_ff':
            return self.per_layer('feed_forward_length', il, 0)
        if name == 'n_ff_exp':
            return self.per_layer('expert_feed_forward_length', il, 0)
        if name in ('n_embd_head_k', 'n_embd_head_v'):
            d = n_embd // n_head if n_head else 0
            return self.key('attention.key_length' if name.endswith('k') else 'attention.value_length', d) if n_head else 0
        if name == 'n_embd_k_gqa':
            return self.get('n_embd_head_k', il) * self.get('n_head_kv', il)
        if name == 'n_embd_v_gqa':
            return self.get('n_embd_head_v', il) * self.get('n_head_kv', il)
        if name == 'n_rot':
            return self.key('rope.dimension_count', self.get('n_embd_head_k', il)) if n_head else 0
        if name == 'n_expert':
            return self.key('expert_count', 0)
        if name == 'n_expert_used':
            return self.per_layer('expert_used_count', il, 0)
        if name == 'n_ctx_train':
            return self.key('context_length', 0)
        if name == 'n_token_types':
            return self.kv.get('tokenizer.ggml.token_type_count', 0) or 0
        if name in ('n_embd_head_k_mla', 'n_embd_head_v_mla'):
            k = self.key('attention.key_length_mla', 0)
            v = self.key('attention.value_length_mla', 0)
            if k and v:
                return k if name.endswith('k_mla') else v
            return self.get(name[:-4], il)
        if name == 'i':
            return il
        if name.startswith('kv:'):
            k = name[3:]
            v = self.key(k, self.defaults.get(k, 0))
            if isinstance(v, list):
                v = v[il] if il < len(v) else 0
            if isinstance(v, bool):
                v = int(v)
            if not isinstance(v, int):
                raise Unsupported('non-integer key ' + k)
            return v
        raise Unsupported(name)

    def eval(self, e, il):
        t = e[0]
        if t == 'num':
            return e[1]
        if t == 'id':
            return self.get(e[1], il)
        if t == 'call':
            a = [self.eval(x, il) for x in e[2]]
            return max(a) if e[1] == 'max' else min(a)
        if t == '?':
            return self.eval(e[2], il) if self.eval(e[1], il) else self.eval(e[3], il)
        a, b = self.eval(e[1], il), self.eval(e[2], il)
        if t in '/%' and b == 0:
            raise Unsupported('division by zero')
        return {'+': lambda: a + b, '-': lambda: a - b, '*': lambda: a * b,
                '/': lambda: int(a / b), '%': lambda: a % b,
                '==': lambda: int(a == b), '!=': lambda: int(a != b), '<': lambda: int(a < b),
                '>': lambda: int(a > b), '<=': lambda: int(a <= b), '>=': lambda: int(a >= b),
                '&&': lambda: int(bool(a) and bool(b)), '||': lambda: int(bool(a) or bool(b))}[t]()


# ---------------------------------------------------------------- llama.cpp source
def func_body(src, name):
    m = re.search(r'\b' + name + r'\s*\([^)]*\)\s*(?:const\s*)?\{', src)
    if not m:
        return None
    i = m.end()
    depth = 1
    while depth and i < len(src):
        if src[i] == '{':
            depth += 1
        elif src[i] == '}':
            depth -= 1
        i += 1
    return src[m.end():i - 1]


def split_args(s):
    out, depth, cur = [], 0, ''
    for ch in s:
        if ch in '({[':
            depth += 1
        elif ch in ')}]':
            depth -= 1
        if ch == ',' and depth == 0:
            out.append(cur.strip())
            cur = ''
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def calls(body, fname):
    """(start, args) of every call of fname( ... ) in body."""
    out = []
    for m in re.finditer(r'\b' + fname + r'\s*\(', body):
        i, depth = m.end(), 1
        while depth and i < len(body):
            if body[i] == '(':
                depth += 1
            elif body[i] == ')':
                depth -= 1
            i += 1
        out.append((m.start(), split_args(body[m.end():i - 1])))
    return out


def strip_comments(s):
    s = re.sub(r'/\*.*?\*/', '', s, flags=re.S)
    return re.sub(r'//[^\n]*', '', s)


def main():
    src_dir, archs_dir = sys.argv[1], sys.argv[2]
    arch_cpp = strip_comments(open(os.path.join(src_dir, 'llama-arch.cpp')).read())
    model_cpp = strip_comments(open(os.path.join(src_dir, 'llama-model.cpp')).read())
    hparams_h = strip_comments(open(os.path.join(src_dir, 'llama-hparams.h')).read())

    def table(name):
        m = re.search(name + r'\s*=\s*\{(.*?)\n\};', arch_cpp, re.S)
        return dict(re.findall(r'\{\s*(LLM_[A-Z0-9_]+)\s*,\s*"([^"]*)"\s*\}', m.group(1)))

    arch_names = table('LLM_ARCH_NAMES')
    kv_names = table('LLM_KV_NAMES')
    tensor_names = table('LLM_TENSOR_NAMES')

    # hparams field -> C++ type and default
    field_type, field_default = {}, {}
    for t, f in re.findall(r'^\s*std::array<(uint32_t|int32_t|float|bool), *[A-Z_0-9]+>\s+([a-z_0-9]+)\s*;', hparams_h, re.M):
        field_type[f] = t
    for t, f, d in re.findall(r'^\s*(uint32_t|int32_t|float|bool|uint64_t|int64_t)\s+([a-z_0-9]+)\s*(?:=\s*([^;]+))?;', hparams_h, re.M):
        field_type[f] = t
        if d is not None:
            try:
                field_default[f] = int(d.strip().rstrip('uU'))
            except ValueError:
                pass

    # arch enum -> model class (llama_model_mapping)
    mapping = dict(re.findall(r'case (LLM_ARCH_[A-Z0-9_]+):\s*return new (llama_model_[a-z0-9_]+)\(', model_cpp))
    class_src = {}
    for fn in sorted(os.listdir(os.path.join(src_dir, 'models'))):
        if fn.endswith('.cpp'):
            s = strip_comments(open(os.path.join(src_dir, 'models', fn)).read())
            for cls in set(re.findall(r'\b(llama_model_[a-z0-9_]+)::load_arch_tensors', s)):
                class_src[cls] = (fn, s)

    # a class that reuses its base's load_arch_tensors (src/models/models.h)
    models_h = strip_comments(open(os.path.join(src_dir, 'models', 'models.h')).read())
    bases = dict(re.findall(r'struct (llama_model_[a-z0-9_]+)\s*:\s*public (llama_model_[a-z0-9_]+)', models_h))
    for cls in list(mapping.values()):
        c = cls
        while c not in class_src and c in bases:
            c = bases[c]
        if c in class_src and cls not in class_src:
            class_src[cls] = class_src[c] + (c,)
    class_src = {k: v if len(v) == 3 else v + (k,) for k, v in class_src.items()}

    # hparams field -> GGUF key suffix (every get_key / get_key_or_arr in the tree)
    all_src = model_cpp + ''.join(v[1] for v in class_src.values())
    field_key = {}
    for kvid, field in re.findall(r'get_key(?:_or_arr)?\(\s*(LLM_KV_[A-Z0-9_]+)\s*,\s*hparams\.([a-z_0-9]+)', all_src):
        if kvid in kv_names and kv_names[kvid].startswith('%s.'):
            field_key.setdefault(field, kv_names[kvid][3:])
    field_key['n_ff_exp_arr'] = 'expert_feed_forward_length'
    fields = {f: k for f, k in field_key.items() if not f.endswith('_arr')}
    key_default = {k: field_default.get(f, 0) for f, k in fields.items()}

    # the tiny models
    tiny = {}
    for fn in sorted(os.listdir(archs_dir)):
        if fn.endswith('.gguf'):
            kv, ts = read_gguf(os.path.join(archs_dir, fn))
            tiny.setdefault(kv['general.architecture'], []).append((fn, kv, ts))

    out = []
    w = out.append
    w('// @generated by scripts/gen_arch_tables.py from llama.cpp 0c1e570 (the tree vendored in')
    w('// llama-cpp-python 0.3.36: src/llama-arch.cpp, src/llama-model.cpp, src/models/*.cpp) and the')
    w('// tiny per-architecture models of shared/goldens/llamacpp/archs/. Do not edit: rerun the script.')
    w('')
    w('use super::{ArchTable, KeySpec, KeyType, TensorSpec, Need};')
    w('')
    w('/// `LLM_ARCH_NAMES` (src/llama-arch.cpp): every architecture name the loader knows.')
    w('pub(crate) static ARCH_NAMES: &[&str] = &[')
    for k, v in arch_names.items():
        if v != '(unknown)':
            w('    %s,' % rs(v))
    w('];')
    w('')
    w('/// Defaults of the hparams fields read from `{arch}.*` keys (src/llama-hparams.h), by key.')
    w('pub(crate) static KEY_DEFAULTS: &[(&str, i64)] = &[')
    for k in sorted(key_default):
        w('    (%s, %d),' % (rs(k), key_default[k]))
    w('];')
    w('')

    stats = {'archs': 0, 'calls': 0, 'unsupported_dims': 0, 'required': 0, 'unmatched': 0}
    w('pub(crate) static ARCHS: &[ArchTable] = &[')
    enum_of = {v: k for k, v in arch_names.items()}
    for arch in sorted(tiny):
        cls = mapping.get(enum_of.get(arch))
        if cls not in class_src:
            print('no source for', arch, cls, file=sys.stderr)
            continue
        fn, s, impl = class_src[cls]
        hp_body = func_body(s, impl + '::load_arch_hparams') or ''
        t_body = func_body(s, impl + '::load_arch_tensors') or ''
        stats['archs'] += 1

        # keys read unconditionally (depth 0 of the body) with get_key / get_key_or_arr:
        # required without a trailing `false`; type-checked either way when present
        keys = []
        depth = 0
        for line in hp_body.split('\n'):
            if True:
                for m in re.finditer(r'ml\.get_key(_or_arr)?\(\s*(LLM_KV_[A-Z0-9_]+)\s*,\s*([^,)]+)((?:,[^)]*)?)\)', line):
                    kvid, var, rest = m.group(2), m.group(3).strip(), m.group(4)
                    if kvid not in kv_names or not kv_names[kvid].startswith('%s.'):
                        continue
                    # under a condition a key is not required; present, it is still read
                    # with get_key's type check (a key read on a branch not taken is the
                    # rare case this over-checks)
                    required = 'false' not in rest and depth == 0
                    if m.group(1) is not None:
                        # get_key_or_arr(KEY, arr, n[, required]): only arrays of n_layer_all
                        # values are per-layer; fixed-length ones (rope sections) are left out
                        n_arg = (rest.strip(', ').split(',') + [''])[0].strip()
                        if n_arg not in ('hparams.n_layer_all', 'n_layer_all'):
                            continue
                    key = kv_names[kvid].replace('%s', arch)
                    fld = var.split('.')[-1]
                    ty = {'uint32_t': 'U32', 'int32_t': 'I32', 'float': 'F32', 'bool': 'Bool',
                          'uint64_t': 'U64'}.get(field_type.get(fld, ''), None)
                    if ty is None:
                        m2 = re.search(r'(uint32_t|float|bool|int32_t)\s+' + re.escape(var) + r'\b', hp_body)
                        ty = {'uint32_t': 'U32', 'int32_t': 'I32', 'float': 'F32', 'bool': 'Bool'}.get(m2.group(1)) if m2 else None
                    if ty is None:
                        continue
                    per_layer = m.group(1) is not None
                    if all(k[0] != key for k in keys):
                        keys.append((key, ty, per_layer, required))
            depth += line.count('{') - line.count('}')

        # locals of load_arch_tensors
        locals_ = {}
        for name, expr in re.findall(r'(?:const\s+)?(?:int64_t|uint32_t|int32_t|int|auto|size_t)\s+([a-z_0-9]+)\s*=\s*([^;{]+);', t_body):
            if name in locals_ or name in BASE:
                continue
            try:
                locals_[name] = parse(expr)
            except Unsupported:
                pass

        # divisors of the locals computed unconditionally at the top of load_arch_tensors:
        # a zero one kills llama.cpp with SIGFPE before any tensor is checked
        divisors = []
        depth = 0
        for line in t_body.split('\n'):
            if depth == 0:
                m = re.match(r'\s*(?:const\s+)?(?:int64_t|uint32_t|int32_t|int)\s+[a-z_0-9]+\s*=\s*([^;{?]+);', line)
                if m:
                    try:
                        e = normalize(parse(m.group(1)), locals_, fields)
                        stack = [e]
                        while stack:
                            n = stack.pop()
                            if n[0] in ('/', '%'):
                                divisors.append(show(n[2]))
                            if n[0] not in ('num', 'id'):
                                stack.extend(x for x in n[1:] if isinstance(x, tuple))
                    except Unsupported:
                        pass
            depth += line.count('{') - line.count('}')
        divisors = sorted(set(d for d in divisors if not re.fullmatch(r'\(?\d+\)?', d)))

        # every create_tensor call, helpers expanded
        cands = []  # (name, layered, dims(list of expr or None), required)

        def add(tensor_enum, suffix, layered, dims_text, flags):
            if tensor_enum not in tensor_names:
                return
            tname = tensor_names[tensor_enum]
            name = tname.replace('%d', '{i}') + ('.' + suffix if suffix else '')
            dims = []
            for d in split_args(dims_text.strip().strip('{}')):
                try:
                    dims.append(normalize(parse(d), locals_, fields))
                except Unsupported:
                    dims.append(None)
            required = 'TENSOR_NOT_REQUIRED' not in flags and 'skip' not in flags
            cands.append((name, '%d' in tname, dims, required))

        for _, args in calls(t_body, 'create_tensor'):
            if len(args) < 2:
                continue
            m = re.match(r'tn\(\s*(LLM_TENSOR_[A-Z0-9_]+)\s*(?:,\s*"([a-z_]+)")?\s*(,\s*[^)]*)?\)$', args[0])
            if not m:
                continue
            add(m.group(1), m.group(2), m.group(3) is not None, args[1], ','.join(args[2:]))
        for _, args in calls(t_body, 'create_tensor_qkv'):
            if len(args) < 7:
                continue
            e, q, k, v, fl = args[2], args[3], args[4], args[5], args[6]
            qkv = '(%s) + (%s) + (%s)' % (q, k, v)
            add('LLM_TENSOR_ATTN_QKV', 'weight', True, '{%s, %s}' % (e, qkv), 'TENSOR_NOT_REQUIRED')
            add('LLM_TENSOR_ATTN_QKV', 'bias', True, '{%s}' % qkv, 'TENSOR_NOT_REQUIRED')
            for t, d in (('Q', q), ('K', k), ('V', v)):
                add('LLM_TENSOR_ATTN_' + t, 'weight', True, '{%s, %s}' % (e, d), fl + '|ALT_QKV')
                add('LLM_TENSOR_ATTN_' + t, 'bias', True, '{%s}' % d, 'TENSOR_NOT_REQUIRED')
        for _, args in calls(t_body, 'create_tensor_gate_up_exps'):
            if len(args) < 6:
                continue
            e, f, n, fl = args[2], args[3], args[4], args[5]
            add('LLM_TENSOR_FFN_GATE_UP_EXPS', 'weight', True, '{%s, (%s) * 2, %s}' % (e, f, n), 'TENSOR_NOT_REQUIRED')
            for t in ('GATE', 'UP'):
                add('LLM_TENSOR_FFN_%s_EXPS' % t, 'weight', True, '{%s, %s, %s}' % (e, f, n), fl + '|ALT_GATE_UP')
        stats['calls'] += len(cands)

        # the tiny models: which candidate makes each tensor, and which are required
        variants = []
        for fn0, kv, ts in tiny[arch]:
            present = {}
            for name, dims in ts:
                m = re.match(r'blk\.(\d+)\.(.*)$', name)
                key = ('blk.{i}.' + m.group(2)) if m else name
                present.setdefault(key, []).append((int(m.group(1)) if m else None, dims))
            variants.append((Env(arch, kv, key_default), kv.get(arch + '.block_count', 0), present))

        # Tensors of the test model no parsed call creates (calls through a lambda's
        # `tn(tid, ...)`): required where the test model has them, shape unchecked.
        known = set(c[0] for c in cands)
        for env, _, present in variants:
            for name, inst in present.items():
                # (.scale / .input_scale: the generic pass of load_tensors, not a table row)
                if name not in known and not name.endswith(('.scale', '.input_scale')):
                    known.add(name)
                    cands.append((name, '{i}' in name, [None] * len(inst[0][1]), True))
                    stats['from_test_model'] = stats.get('from_test_model', 0) + 1

        # A dimension no call reproduces on the test model (an hparam this reading does not
        # model: sliding-window or MLA head sizes, per-layer kinds) is left unchecked ('?').
        def reproduces(dims, env, present, name):
            for il, shape in present.get(name, []):
                try:
                    if any(d is None for d in dims) or [env.eval(d, il or 0) for d in dims] != shape:
                        return False
                except Unsupported:
                    return False
            return True

        for idx, (name, layered, dims, required) in enumerate(cands):
            if all(any(reproduces(c[2], env, present, name) for c in cands if c[0] == name)
                   for env, _, present in variants):
                continue
            new_dims = list(dims)
            for env, _, present in variants:
                for il, shape in present.get(name, []):
                    for k, d in enumerate(new_dims):
                        try:
                            ok = d is not None and k < len(shape) and env.eval(d, il or 0) == shape[k]
                        except Unsupported:
                            ok = False
                        if not ok:
                            new_dims[k] = None
            stats['unverified'] = stats.get('unverified', 0) + 1
            cands[idx] = (name, layered, new_dims, required)

        w('    // %s: src/models/%s (%s::load_arch_tensors, load_arch_hparams)' % (arch, fn, impl))
        w('    ArchTable {')
        w('        name: %s,' % rs(arch))
        w('        source: %s,' % rs('src/models/' + fn))
        w('        keys: &[')
        for key, ty, pl, req in keys:
            w('            KeySpec { key: %s, ty: KeyType::%s, per_layer: %s, required: %s },'
              % (rs(key), ty, 'true' if pl else 'false', 'true' if req else 'false'))
        w('        ],')
        w('        divisors: &[%s],' % ', '.join(rs(d) for d in divisors))
        w('        tensors: &[')
        seen = set()
        for name, layered, dims, required in cands:
            needs = []
            for env, n_layer_all, present in variants:
                needs.append((need_of(name, layered, dims, required, env, n_layer_all, present, stats),
                              env.get('n_expert', 0) > 0))
            when = ''
            if len(set(n for n, _ in needs)) == 1:
                need = needs[0][0]
            elif len(needs) == 2 and needs[0][1] != needs[1][1] and 'Need::Optional' in (needs[0][0], needs[1][0]):
                # the dense and the MoE test models differ: llama.cpp branches on n_expert
                need, moe = [n for n in needs if n[0] != 'Need::Optional'][0]
                when = 'n_expert > 0' if moe else 'n_expert == 0'
            else:
                need = 'Need::Optional'
            if need != 'Need::Optional':
                stats['required'] += 1
            sig = (name, tuple(show(d) if d else '?' for d in dims), need, when)
            if sig in seen:
                continue
            seen.add(sig)
            stats['unsupported_dims'] += sum(1 for d in dims if d is None)
            ds = ', '.join(rs(show(d)) if d is not None else rs('?') for d in dims)
            w('            TensorSpec { name: %s, dims: &[%s], need: %s, when: %s },' % (rs(name), ds, need, rs(when)))
        w('        ],')
        w('    },')
    w('];')
    print('\n'.join(out))
    print(stats, file=sys.stderr)


def matches(dims, shape, env, il):
    """check_tensor_dims: equal in every given dim ('?' = any), 1 beyond."""
    for k in range(max(len(dims), len(shape), 1)):
        want = dims[k] if k < len(dims) else ('num', 1)
        got = shape[k] if k < len(shape) else 1
        if want is None:
            continue
        try:
            if env.eval(want, il) != got:
                return False
        except Unsupported:
            return False
    return True


def need_of(name, layered, dims, required, env, n_layer_all, present, stats):
    inst = present.get(name)
    # create_tensor_qkv / create_tensor_gate_up_exps: the split tensors are required when the
    # fused one is absent, so where the test model holds the fused one they are required in its
    # layers (the check lets the fused one stand for them)
    fused = {'.attn_q.weight': '.attn_qkv.weight', '.attn_k.weight': '.attn_qkv.weight',
             '.attn_v.weight': '.attn_qkv.weight', '.ffn_gate_exps.weight': '.ffn_gate_up_exps.weight',
             '.ffn_up_exps.weight': '.ffn_gate_up_exps.weight'}
    if not inst and required and layered:
        for split, f in fused.items():
            if name.endswith(split) and present.get(name[:-len(split)] + f):
                layers = sorted(set(il for il, _ in present[name[:-len(split)] + f]))
                if layers == list(range(n_layer_all)):
                    return 'Need::EveryLayer'
                return 'Need::Layers(&[%s])' % ', '.join(str(x) for x in layers)
    if not (inst and required):
        return 'Need::Optional'
    layers = sorted(set(il for il, _ in inst if il is not None))
    for il, shape in inst:
        if not matches(dims, shape, env, il or 0):
            # another call for the same name made it (a branch): this one stays optional
            stats['unmatched'] += 1
            return 'Need::Optional'
    if not layered:
        return 'Need::Required'
    if layers == list(range(n_layer_all)):
        return 'Need::EveryLayer'
    return 'Need::Layers(&[%s])' % ', '.join(str(x) for x in layers)


def rs(s):
    return '"' + s.replace('\\', '\\\\').replace('"', '\\"') + '"'


if __name__ == '__main__':
    main()
