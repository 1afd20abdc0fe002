//! Test-gguf.cpp: header.

use super::*;

pub(super) fn v1_file() -> Vec<u8> {
    GgufBuilder::new()
        .version(1)
        .kv("general.name", Value::str("v1"))
        .kv("n", Value::Uint32(7))
        .build()
}

pub(super) fn header_cases() -> Vec<Case> {
    let v1_loads = || {
        loads_clean(|g| {
            assert_eq!((g.version(), g.header().size()), (1, 16));
            assert_eq!(g.get_str("general.name"), Some("v1"));
            assert_eq!(g.get_u64("n"), Some(7));
            // 16-byte header + (4 + 12 + 4 + 4 + 2) + (4 + 1 + 4 + 4).
            assert_eq!(g.directory().directory_end(), 16 + 26 + 13);
        })
    };
    vec![
        case("HEADER_BAD_MAGIC", GgufBuilder::new().magic(*b"FUGG").build()).all(err(
            ErrorKind::BadMagic { found: *b"FUGG" },
            "gguf::header::bad_magic",
            0,
            "header.magic",
        )),
        // A short non-GGUF input is not a truncated GGUF: the magic is judged on its own.
        case("HEADER_BAD_MAGIC (4-byte file)", b"FUGG".to_vec()).all(err(
            ErrorKind::BadMagic { found: *b"FUGG" },
            "gguf::header::bad_magic",
            0,
            "header.magic",
        )),
        case("HEADER_BAD_MAGIC (5-byte text file)", b"hello".to_vec()).all(err(
            ErrorKind::BadMagic { found: *b"hell" },
            "gguf::header::bad_magic",
            0,
            "header.magic",
        )),
        case("HEADER_EMPTY (3 bytes of the magic)", b"GGU".to_vec()).all(err(
            ErrorKind::UnexpectedEof { needed: 1 },
            "gguf::input::unexpected_eof",
            3,
            "header.magic",
        )),
        case("HEADER_BAD_VERSION_0", GgufBuilder::new().version(0).build()).all(err(
            ErrorKind::UnsupportedVersion { version: 0 },
            "gguf::header::unsupported_version",
            4,
            "header.version",
        )),
        case("HEADER_BAD_VERSION_1", v1_file()).all(err(
            ErrorKind::VersionOneDisabled,
            "gguf::header::v1_disabled",
            4,
            "header.version",
        )),
        case("HEADER_BAD_VERSION_1 (v1 reading enabled)", v1_file())
            .opts(|o| o.with_v1(true))
            .strict(v1_loads())
            .llama(err(
                ErrorKind::VersionOneDisabled,
                "gguf::header::v1_disabled",
                4,
                "header.version",
            ))
            .lenient(v1_loads()),
        case("HEADER_BAD_VERSION_FUTURE", GgufBuilder::new().version(4).build()).all(err(
            ErrorKind::UnsupportedVersion { version: 4 },
            "gguf::header::unsupported_version",
            4,
            "header.version",
        )),
        case("HEADER_BAD_N_TENSORS", GgufBuilder::new().tensor_count(u64::MAX).build()).all(err(
            ErrorKind::TooManyTensors { count: u64::MAX, max: MAX_COUNT },
            "gguf::limits::too_many_tensors",
            8,
            "header.tensor_count",
        )),
        case("HEADER_BAD_N_KV", GgufBuilder::new().kv_count(u64::MAX).build()).all(err(
            ErrorKind::TooManyKvs { count: u64::MAX, max: MAX_COUNT },
            "gguf::limits::too_many_kvs",
            16,
            "header.kv_count",
        )),
        case("HEADER_EMPTY", GgufBuilder::new().build()).all(loads_clean(|g| {
            assert_eq!(g.version(), 3);
            assert_eq!((g.header().tensor_count, g.header().kv_count), (0, 0));
            assert_eq!((g.kv_len(), g.tensor_infos().len()), (0, 0));
            assert_eq!(g.directory().directory_end(), HEADER);
        })),
    ]
}
