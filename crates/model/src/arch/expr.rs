//! Tensor dimensions as expressions over llama.cpp's hyperparameters, and their evaluation.
//!
//! The tables write each dimension as a small C-like expression (`(n_embd_head_k * n_head)`,
//! `(kv:expert_feed_forward_length ? kv:expert_feed_forward_length : (n_ff / n_expert_used))`)
//! over the names of llama.cpp's `LLAMA_LOAD_LOCALS` (`src/llama-model.h`) and `kv:SUFFIX`, the
//! hparams field read from `{arch}.SUFFIX`. [`Hparams`] gives the names the values
//! `llama_model_base::load_hparams` (`src/llama-model.cpp`) and `llama_hparams`
//! (`src/llama-hparams.cpp`) give them. Arithmetic is checked `i64`; C's integer division.

/// Where [`Hparams`] reads keys: the model's metadata.
pub trait KeyLookup {
    /// The integer value of `key` for layer `il`: a scalar, or element `il` of a per-layer
    /// array; bools as 0/1. `None` when absent or not an integer.
    fn int(&self, key: &str, il: u32) -> Option<i64>;
    /// The number of elements of the array under `key`.
    fn array_len(&self, key: &str) -> Option<u64>;
}

/// llama.cpp's hyperparameters of one model, as the loader derives them from its keys.
#[allow(missing_debug_implementations)]
pub struct Hparams<'a> {
    arch: &'a str,
    keys: &'a dyn KeyLookup,
}

impl<'a> Hparams<'a> {
    /// The hyperparameters of a model of architecture `arch` whose keys `keys` reads.
    pub fn new(arch: &'a str, keys: &'a dyn KeyLookup) -> Hparams<'a> {
        Hparams { arch, keys }
    }

    fn key(&self, suffix: &str, il: u32) -> Option<i64> {
        self.keys.int(&format!("{}.{suffix}", self.arch), il)
    }

    /// `hparams.n_embd`.
    pub fn n_embd(&self) -> i64 {
        self.key("embedding_length", 0).unwrap_or(0)
    }

    /// `hparams.n_layer_all`: the block count.
    pub fn n_layer_all(&self) -> i64 {
        self.key("block_count", 0).unwrap_or(0)
    }

    /// `hparams.n_head(il)`.
    pub fn n_head(&self, il: u32) -> i64 {
        self.key("attention.head_count", il).unwrap_or(0)
    }

    /// `hparams.n_embd_head_k(il)`: `attention.key_length`, else `n_embd / n_head` (0
    /// without heads). Sliding-window layers' own lengths are not told apart.
    pub fn n_embd_head(&self, il: u32, which: &str) -> i64 {
        let n_head = self.n_head(0);
        if n_head <= 0 {
            return 0;
        }
        let default = self.n_embd() / n_head;
        self.key(which, il).unwrap_or(default)
    }

    /// The value of `name` for layer `il`, `None` when the name is unknown.
    pub fn get(&self, name: &str, il: u32) -> Option<i64> {
        if let Some(suffix) = name.strip_prefix("kv:") {
            return Some(self.key(suffix, il).unwrap_or_else(|| super::key_default(suffix)));
        }
        let head_kv = || self.key("attention.head_count_kv", il).unwrap_or(self.n_head(il));
        let head_k = || self.n_embd_head(il, "attention.key_length");
        let head_v = || self.n_embd_head(il, "attention.value_length");
        Some(match name {
            "i" => i64::from(il),
            "n_embd" => self.n_embd(),
            "n_vocab" => self.keys.array_len("tokenizer.ggml.tokens").map_or(0, |n| n as i64),
            "n_layer_all" => self.n_layer_all(),
            "n_layer" => self.n_layer_all() - self.key("nextn_predict_layers", 0).unwrap_or(0),
            "n_head" => self.n_head(il),
            "n_head_kv" => head_kv(),
            "n_ff" => self.key("feed_forward_length", il).unwrap_or(0),
            "n_ff_exp" => self.key("expert_feed_forward_length", il).unwrap_or(0),
            "n_embd_head_k" => head_k(),
            "n_embd_head_v" => head_v(),
            "n_embd_k_gqa" => head_k().checked_mul(head_kv())?,
            "n_embd_v_gqa" => head_v().checked_mul(head_kv())?,
            "n_rot" if self.n_head(0) > 0 => {
                self.key("rope.dimension_count", il).unwrap_or(head_k())
            }
            "n_rot" => 0,
            "n_expert" => self.key("expert_count", 0).unwrap_or(0),
            "n_expert_used" => self.key("expert_used_count", il).unwrap_or(0),
            "n_ctx_train" => self.key("context_length", 0).unwrap_or(0),
            "n_token_types" => self.keys.int("tokenizer.ggml.token_type_count", 0).unwrap_or(0),
            "n_embd_head_k_mla" | "n_embd_head_v_mla" => {
                let k = self.key("attention.key_length_mla", 0).unwrap_or(0);
                let v = self.key("attention.value_length_mla", 0).unwrap_or(0);
                match (k != 0 && v != 0, name == "n_embd_head_k_mla") {
                    (true, true) => k,
                    (true, false) => v,
                    (false, true) => head_k(),
                    (false, false) => head_v(),
                }
            }
            _ => return None,
        })
    }

    /// Evaluates a table expression for layer `il`: `None` for `?`, an unknown name, a
    /// division by zero or an overflow (the dimension is then not checked).
    pub fn eval(&self, expr: &str, il: u32) -> Option<i64> {
        self.eval_traced(expr, il).0
    }

    /// [`eval`](Self::eval), and whether an integer division by zero was met: what kills
    /// llama.cpp with SIGFPE when it computes the same expression.
    pub fn eval_traced(&self, expr: &str, il: u32) -> (Option<i64>, bool) {
        let mut p =
            Parser { s: expr.as_bytes(), i: 0, hp: self, il, div_zero: false, failed: false };
        let v = p.ternary();
        p.ws();
        let v = v.filter(|_| p.i == p.s.len() && !p.failed);
        (v, p.div_zero)
    }
}

struct Parser<'p, 'a> {
    s: &'p [u8],
    i: usize,
    hp: &'p Hparams<'a>,
    il: u32,
    /// A division by zero was met (in the branches taken).
    div_zero: bool,
    /// A value could not be computed (overflow, division by zero, unknown name) in the
    /// branches taken; parsing goes on so that the other branch can be skipped.
    failed: bool,
}

impl Parser<'_, '_> {
    fn ws(&mut self) {
        while self.s.get(self.i).is_some_and(u8::is_ascii_whitespace) {
            self.i += 1;
        }
    }

    fn eat(&mut self, op: &str) -> bool {
        self.ws();
        let end = self.i + op.len();
        if self.s.get(self.i..end) == Some(op.as_bytes()) {
            // `<` is not `<=`, `=` only in `==`/`!=`.
            if matches!(op, "<" | ">") && self.s.get(end) == Some(&b'=') {
                return false;
            }
            self.i = end;
            return true;
        }
        false
    }

    fn ternary(&mut self) -> Option<i64> {
        let c = self.binary(0)?;
        if self.eat("?") {
            // Both branches are parsed; only the taken one's value and division count, as
            // C evaluates only that one.
            let before = (self.div_zero, self.failed);
            (self.div_zero, self.failed) = (false, false);
            let a = self.ternary()?;
            let a_flags = (self.div_zero, self.failed);
            (self.div_zero, self.failed) = (false, false);
            if !self.eat(":") {
                return None;
            }
            let b = self.ternary()?;
            let b_flags = (self.div_zero, self.failed);
            let (v, flags) = if c != 0 { (a, a_flags) } else { (b, b_flags) };
            self.div_zero = before.0 || flags.0;
            self.failed = before.1 || flags.1;
            return Some(v);
        }
        Some(c)
    }

    // Precedence levels, loosest first, as C has them.
    const LEVELS: [&'static [&'static str]; 6] =
        [&["||"], &["&&"], &["==", "!="], &["<=", ">=", "<", ">"], &["+", "-"], &["*", "/", "%"]];

    fn binary(&mut self, level: usize) -> Option<i64> {
        let Some(ops) = Self::LEVELS.get(level) else { return self.unary() };
        let mut left = self.binary(level + 1)?;
        'more: loop {
            for op in ops.iter() {
                if self.eat(op) {
                    let right = self.binary(level + 1)?;
                    if right == 0 && matches!(*op, "/" | "%") {
                        self.div_zero = true;
                    }
                    left = apply(op, left, right).unwrap_or_else(|| {
                        self.failed = true;
                        0
                    });
                    continue 'more;
                }
            }
            return Some(left);
        }
    }

    fn unary(&mut self) -> Option<i64> {
        self.ws();
        if self.eat("(") {
            let v = self.ternary()?;
            return self.eat(")").then_some(v);
        }
        if self.eat("-") {
            let v = self.unary()?;
            return Some(v.checked_neg().unwrap_or_else(|| {
                self.failed = true;
                0
            }));
        }
        let start = self.i;
        let c = *self.s.get(self.i)?;
        if c.is_ascii_digit() {
            while self.s.get(self.i).is_some_and(u8::is_ascii_digit) {
                self.i += 1;
            }
            return std::str::from_utf8(self.s.get(start..self.i)?).ok()?.parse().ok();
        }
        let ident = |b: &u8| b.is_ascii_alphanumeric() || *b == b'_' || *b == b'.';
        if self.s.get(self.i..self.i + 3) == Some(b"kv:") {
            self.i += 3;
        }
        while self.s.get(self.i).is_some_and(ident) {
            self.i += 1;
        }
        let name = std::str::from_utf8(self.s.get(start..self.i)?).ok()?;
        if name.is_empty() {
            return None;
        }
        if name == "max" || name == "min" {
            if !self.eat("(") {
                return None;
            }
            let a = self.ternary()?;
            if !self.eat(",") {
                return None;
            }
            let b = self.ternary()?;
            if !self.eat(")") {
                return None;
            }
            return Some(if name == "max" { a.max(b) } else { a.min(b) });
        }
        Some(self.hp.get(name, self.il).unwrap_or_else(|| {
            self.failed = true;
            0
        }))
    }
}

fn apply(op: &str, a: i64, b: i64) -> Option<i64> {
    Some(match op {
        "+" => a.checked_add(b)?,
        "-" => a.checked_sub(b)?,
        "*" => a.checked_mul(b)?,
        "/" => a.checked_div(b)?,
        "%" => a.checked_rem(b)?,
        "==" => i64::from(a == b),
        "!=" => i64::from(a != b),
        "<" => i64::from(a < b),
        ">" => i64::from(a > b),
        "<=" => i64::from(a <= b),
        ">=" => i64::from(a >= b),
        "&&" => i64::from(a != 0 && b != 0),
        "||" => i64::from(a != 0 || b != 0),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Keys;
    impl KeyLookup for Keys {
        fn int(&self, key: &str, il: u32) -> Option<i64> {
            match key {
                "t.embedding_length" => Some(256),
                "t.attention.head_count" => Some(4),
                "t.attention.head_count_kv" => Some([2, 1][il as usize]),
                "t.expert_count" => Some(8),
                _ => None,
            }
        }
        fn array_len(&self, _: &str) -> Option<u64> {
            Some(100)
        }
    }

    #[test]
    fn expressions_follow_c() {
        let hp = Hparams::new("t", &Keys);
        assert_eq!(hp.eval("(n_embd_head_k * n_head)", 0), Some(256));
        assert_eq!(hp.eval("n_embd_k_gqa", 1), Some(64));
        assert_eq!(
            hp.eval("(kv:expert_feed_forward_length ? 7 : (n_embd / n_expert))", 0),
            Some(32)
        );
        assert_eq!(hp.eval("n_vocab - 1", 0), Some(99));
        assert_eq!(hp.eval("max(3, n_expert) % 5", 0), Some(3));
        assert_eq!(hp.eval_traced("n_embd / kv:expert_feed_forward_length", 0), (None, true));
        assert_eq!(hp.eval("?", 0), None);
        assert_eq!(hp.eval("n_embd n_embd", 0), None);
        assert_eq!(hp.eval("1 < 2 == 1", 0), Some(1));
        // The branch not taken may divide by zero, as in C.
        assert_eq!(
            hp.eval_traced("(n_expert ? n_embd / n_expert : n_embd / 0)", 0),
            (Some(32), false)
        );
        assert_eq!(hp.eval_traced("(0 ? 1 : n_embd / 0)", 0), (None, true));
    }
}
