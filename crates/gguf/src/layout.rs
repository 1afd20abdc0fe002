//! Where tensor data lives: per-tensor placement checks while the directory is read, and the
//! whole-file checks (absolute offsets, bounds, overlap) once the data section start is known.
//!
//! | check | Strict | LlamaCpp | Lenient |
//! |---|---|---|---|
//! | offset not a multiple of the alignment | error | error | warning |
//! | offset ≠ running sum of padded sizes | — | error | — |
//! | gap before a tensor / data out of directory order | warning | (error above) | warning |
//! | two tensors' data overlap | error | (error above) | warning |
//! | data past the end of the file (when its size is known) | error | error | warning |
//! | offset arithmetic overflows | error | error | error |

use smallvec::SmallVec;

use crate::ast::TensorInfo;
use crate::error::{ErrorKind, WarningKind};
use crate::ggml::align_up;
use crate::options::Profile;

/// A layout problem: fatal in every profile, tolerable (an error unless lenient), or only a
/// warning.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Finding {
    Fatal(ErrorKind),
    Tolerable(ErrorKind),
    Warning(WarningKind),
}

/// Running state of the directory walk.
#[derive(Debug, Clone, Default)]
pub(crate) struct Placement {
    /// Where llama.cpp expects the next tensor: the sum of the earlier padded sizes.
    expected: u64,
    /// Offset and (known) end of the previous tensor in directory order.
    prev: Option<(u64, Option<u64>)>,
}

impl Placement {
    /// Checks one tensor's relative offset as its info is read.
    pub(crate) fn place(
        &mut self,
        profile: Profile,
        alignment: u32,
        offset: u64,
        nbytes: Option<u64>,
    ) -> SmallVec<[Finding; 2]> {
        let mut out = SmallVec::new();
        let end = match nbytes.map(|n| offset.checked_add(n)) {
            Some(None) => {
                out.push(Finding::Fatal(ErrorKind::OffsetOverflow));
                return out;
            }
            Some(Some(end)) => Some(end),
            None => None,
        };
        if !offset.is_multiple_of(u64::from(alignment)) {
            out.push(Finding::Tolerable(ErrorKind::MisalignedOffset { offset, alignment }));
        }
        if profile == Profile::LlamaCpp {
            if offset != self.expected {
                out.push(Finding::Fatal(ErrorKind::NonContiguousOffset {
                    offset,
                    expected: self.expected,
                }));
                return out;
            }
            // llama.cpp only reaches this with a known size (unknown types were rejected).
            let padded = nbytes.and_then(|n| align_up(n, alignment.into()));
            match padded.and_then(|p| self.expected.checked_add(p)) {
                Some(next) => self.expected = next,
                None => out.push(Finding::Fatal(ErrorKind::OffsetOverflow)),
            }
        } else if let Some((prev_offset, prev_end)) = self.prev {
            if offset < prev_offset {
                out.push(Finding::Warning(WarningKind::OutOfOrder));
            } else if let Some(prev_end) = prev_end {
                let packed = align_up(prev_end, alignment.into()).unwrap_or(prev_end);
                if offset > packed {
                    out.push(Finding::Warning(WarningKind::TensorGap { gap: offset - packed }));
                }
            }
        }
        self.prev = Some((offset, end));
        out
    }
}

/// A finding about one tensor.
#[derive(Debug)]
pub(crate) struct TensorFinding {
    pub(crate) tensor: usize,
    pub(crate) finding: Finding,
}

/// Resolves absolute offsets and checks bounds and overlap, once `data_offset` is known.
/// Findings come in directory order: first every bounds problem, then overlaps.
pub(crate) fn finish(
    profile: Profile,
    tensors: &mut [TensorInfo],
    data_offset: u64,
    file_size: Option<u64>,
) -> Vec<TensorFinding> {
    let mut out = Vec::new();
    for (i, t) in tensors.iter_mut().enumerate() {
        let Some(abs) = data_offset.checked_add(t.offset) else {
            out.push(TensorFinding {
                tensor: i,
                finding: Finding::Fatal(ErrorKind::OffsetOverflow),
            });
            return out;
        };
        t.abs_offset = abs;
        let Some(nbytes) = t.nbytes else { continue };
        let Some(end) = abs.checked_add(nbytes) else {
            out.push(TensorFinding {
                tensor: i,
                finding: Finding::Fatal(ErrorKind::OffsetOverflow),
            });
            return out;
        };
        if let Some(file_size) = file_size
            && end > file_size
        {
            let kind = ErrorKind::TensorOutOfBounds { end, file_size };
            out.push(TensorFinding { tensor: i, finding: Finding::Tolerable(kind) });
        }
    }
    if profile != Profile::LlamaCpp {
        // Sort by offset and sweep: a tensor overlaps if it starts before the furthest end
        // seen so far. Empty tensors occupy nothing.
        let mut order: Vec<(u64, u64, usize)> = tensors
            .iter()
            .enumerate()
            .filter_map(|(i, t)| Some((t.offset, t.offset.checked_add(t.nbytes?)?, i)))
            .filter(|&(start, end, _)| end > start)
            .collect();
        order.sort_unstable();
        let mut furthest: Option<(u64, usize)> = None;
        let mut overlaps = Vec::new();
        for &(start, end, i) in &order {
            if let Some((f_end, f_i)) = furthest {
                if start < f_end {
                    // Report at whichever of the two comes later in the directory.
                    let (at, other) = if i > f_i { (i, f_i) } else { (f_i, i) };
                    overlaps.push((at, other));
                }
                if end > f_end {
                    furthest = Some((end, i));
                }
            } else {
                furthest = Some((end, i));
            }
        }
        overlaps.sort_unstable();
        out.extend(overlaps.into_iter().map(|(at, other)| TensorFinding {
            tensor: at,
            finding: Finding::Tolerable(ErrorKind::TensorOverlap { other: other as u64 }),
        }));
    }
    out
}
