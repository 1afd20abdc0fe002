//! Shard file names: `<prefix>-%05d-of-%05d.gguf`, numbered from 1.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// A shard's file name taken apart: `dir/model-00002-of-00004.gguf` is prefix `dir/model`,
/// number 2, count 4.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ShardName {
    /// The path up to the `-NNNNN-of-NNNNN.gguf` suffix (directory included).
    pub prefix: PathBuf,
    /// The shard's number in the name, 1-based (`split.no + 1`).
    pub number: u64,
    /// The shard count in the name.
    pub count: u64,
}

impl ShardName {
    /// Parses `path`'s file name as `<prefix>-NNNNN-of-NNNNN.gguf`.
    ///
    /// Each number is what C's `%05d` prints: exactly 5 digits, or more without a leading zero
    /// (a count past 99,999); the number is at least 1 and at most the count. Anything else —
    /// another extension, a name that is not UTF-8, `-0001-of-0002` — is `None`.
    ///
    /// ```
    /// use sipllm_streaming::split::ShardName;
    ///
    /// let n = ShardName::parse("models/llama-00002-of-00004.gguf".as_ref()).unwrap();
    /// assert_eq!((n.prefix.to_str(), n.number, n.count), (Some("models/llama"), 2, 4));
    /// assert_eq!(n.path_of(0), std::path::Path::new("models/llama-00001-of-00004.gguf"));
    /// assert!(ShardName::parse("llama.gguf".as_ref()).is_none());
    /// ```
    pub fn parse(path: &Path) -> Option<ShardName> {
        let name = path.file_name()?.to_str()?;
        let stem = name.strip_suffix(".gguf")?;
        let (rest, count) = stem.rsplit_once("-of-")?;
        let (prefix, number) = rest.rsplit_once('-')?;
        let (number, count) = (printed_number(number)?, printed_number(count)?);
        if number == 0 || number > count {
            return None;
        }
        Some(ShardName { prefix: path.with_file_name(prefix), number, count })
    }

    /// The path of the shard with `split.no = split_no` (0-based) in this name's set.
    pub fn path_of(&self, split_no: u64) -> PathBuf {
        let mut s = OsString::from(self.prefix.as_os_str());
        s.push(format!("-{:05}-of-{:05}.gguf", split_no.saturating_add(1), self.count));
        PathBuf::from(s)
    }
}

/// A number as `%05d` prints it: exactly 5 digits, or more without a leading zero.
fn printed_number(s: &str) -> Option<u64> {
    let digits = s.len() >= 5 && s.bytes().all(|b| b.is_ascii_digit());
    let canonical = s.len() == 5 || !s.starts_with('0');
    if digits && canonical { s.parse().ok() } else { None }
}

/// The file name of shard `split_no` (0-based) of `count`: `<prefix>-%05d-of-%05d.gguf` with
/// `split_no + 1`, as gguf-split and gguf-py name them.
///
/// ```
/// assert_eq!(sipllm_streaming::split::shard_file_name("m", 0, 3), "m-00001-of-00003.gguf");
/// ```
pub fn shard_file_name(prefix: &str, split_no: u16, count: u16) -> String {
    format!("{prefix}-{:05}-of-{count:05}.gguf", u32::from(split_no) + 1)
}

/// The path of shard `split_no` (0-based) of `count` for a path prefix (`dir/model` →
/// `dir/model-00001-of-00004.gguf`), as llama.cpp's `llama_split_path`.
pub fn shard_path(prefix: &Path, split_no: u16, count: u16) -> PathBuf {
    let mut s = OsString::from(prefix.as_os_str());
    s.push(format!("-{:05}-of-{count:05}.gguf", u32::from(split_no) + 1));
    PathBuf::from(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Option<(String, u64, u64)> {
        ShardName::parse(Path::new(s))
            .map(|n| (n.prefix.to_string_lossy().into_owned(), n.number, n.count))
    }

    #[test]
    fn names_parse_as_gguf_split_prints_them() {
        assert_eq!(parse("m-00001-of-00003.gguf"), Some(("m".into(), 1, 3)));
        assert_eq!(
            parse("/a/b/Llama-3-8B-Q4_K_M-00003-of-00003.gguf"),
            Some(("/a/b/Llama-3-8B-Q4_K_M".into(), 3, 3))
        );
        // Dashes and "-of-" inside the prefix: only the suffix counts.
        assert_eq!(parse("x-of-y-00002-of-00002.gguf"), Some(("x-of-y".into(), 2, 2)));
        // An empty prefix is what gguf-split writes for an output prefix of "".
        assert_eq!(parse("-00001-of-00002.gguf"), Some(("".into(), 1, 2)));
        // Wider than 5 digits: %05d of a number past 99,999.
        assert_eq!(parse("m-100000-of-123456.gguf"), Some(("m".into(), 100_000, 123_456)));
        assert_eq!(parse("m-00007-of-123456.gguf"), Some(("m".into(), 7, 123_456)));
    }

    #[test]
    fn other_names_do_not_parse() {
        for bad in [
            "m.gguf",
            "m-00001-of-00003.bin",
            "m-00001-of-00003.gguf.part",
            "m-0001-of-0003.gguf",     // too narrow
            "m-000001-of-000003.gguf", // %05d never pads to 6
            "m-00000-of-00003.gguf",   // numbered from 1
            "m-00004-of-00003.gguf",   // past the count
            "m-00001-of-00000.gguf",
            "m-0000a-of-00003.gguf",
            "m-+0001-of-00003.gguf",
            "m00001-of-00003.gguf",
            "m-00001-00003.gguf",
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn names_format_and_round_trip() {
        assert_eq!(shard_file_name("m", 0, 1), "m-00001-of-00001.gguf");
        assert_eq!(shard_file_name("m", u16::MAX - 1, u16::MAX), "m-65535-of-65535.gguf");
        let p = shard_path(Path::new("d/m"), 2, 12);
        assert_eq!(p, Path::new("d/m-00003-of-00012.gguf"));
        let n = ShardName::parse(&p).unwrap();
        assert_eq!((n.number, n.count), (3, 12));
        for i in 0..12 {
            assert_eq!(n.path_of(i), shard_path(Path::new("d/m"), i as u16, 12));
        }
        // A wide count formats wide, and parses back.
        let wide = ShardName { prefix: "m".into(), number: 1, count: 100_000 };
        assert_eq!(wide.path_of(99_999), Path::new("m-100000-of-100000.gguf"));
        assert_eq!(ShardName::parse(&wide.path_of(99_999)).unwrap().number, 100_000);
    }
}
