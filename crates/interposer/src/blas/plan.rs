//! A GEMM's shape and its pieces: pure arithmetic over cuBLAS's column-major arguments.
//!
//! `C = α·op(A)·op(B) + β·C`, `C` being `m × n`, `op(A)` `m × k`, `op(B)` `k × n`, each matrix
//! column-major with its leading dimension, and for a strided batch each matrix of batch `i`
//! `i · stride` elements further on. A piece computes a band of `C` whole: columns `[s, s + w)`
//! (axis N: the same `A`, the band's columns of `op(B)`) or rows (axis M: the band's rows of
//! `op(A)`, the same `B`). Each element of `C` is computed by exactly one piece, from the same
//! inputs and the same `k`, so a piece's result is the whole call's wherever cuBLAS computes
//! the band as it computed it within the whole; that is checked on the device
//! ([`super::check`]), never assumed. `k` is never split: that would change the order of the
//! sums.

// Device pointers are 64-bit integers, sizes `usize` and dimensions `int` (at most 2³¹); Baton
// runs on 64-bit Linux only, where the conversions between them are exact.
#![allow(clippy::cast_possible_truncation)]

use std::ffi::c_int;

/// cuBLAS's `CUBLAS_OP_N`: the matrix as stored (`T` and `C` transpose it).
pub(crate) const OP_N: c_int = 0;

/// Pieces are a multiple of this many columns or rows wide (the last may be narrower), so that
/// each piece's pointers keep the whole call's alignment and its tiles stay whole.
pub(crate) const STEP: c_int = 128;

/// The arguments of a GEMM that say which memory it reads and writes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct Gemm {
    pub(crate) transa: c_int,
    pub(crate) transb: c_int,
    pub(crate) m: c_int,
    pub(crate) n: c_int,
    pub(crate) k: c_int,
    pub(crate) a: usize,
    pub(crate) lda: c_int,
    pub(crate) stride_a: i64,
    pub(crate) b: usize,
    pub(crate) ldb: c_int,
    pub(crate) stride_b: i64,
    pub(crate) c: usize,
    pub(crate) ldc: c_int,
    pub(crate) stride_c: i64,
    /// Matrices in the batch (1 for a single GEMM).
    pub(crate) batch: c_int,
    /// Bytes per element of `A`, `B` and `C`.
    pub(crate) bytes: [usize; 3],
    /// Whether only columns may be split (a call whose other arguments follow `C`'s rows, as
    /// a bias added to each row does).
    pub(crate) only_n: bool,
    /// cuBLASLt's input `C` where it is not the output (`c` then being `D`): its address (0:
    /// none), leading dimension, batch stride and bytes per element.
    pub(crate) c_in: Option<CIn>,
}

/// An input `C` apart from the output ([`Gemm::c_in`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct CIn {
    pub(crate) at: usize,
    pub(crate) ld: c_int,
    pub(crate) stride: i64,
    pub(crate) bytes: usize,
}

/// Which dimension of `C` pieces divide.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Axis {
    /// Columns (`n`).
    N,
    /// Rows (`m`).
    M,
}

/// How a call is divided: along `axis`, bands `width` wide from 0 (the last one narrower if the
/// dimension is not a multiple).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Split {
    pub(crate) axis: Axis,
    pub(crate) width: c_int,
}

impl Split {
    /// The bands `(start, width)` this split makes of `g`.
    pub(crate) fn bands(self, g: &Gemm) -> impl Iterator<Item = (c_int, c_int)> {
        let len = match self.axis {
            Axis::N => g.n,
            Axis::M => g.m,
        };
        let width = self.width.max(1);
        (0..len)
            .step_by(width as usize)
            .map(move |s| (s, width.min(len - s)))
    }

    /// How many pieces it makes of `g`.
    pub(crate) fn pieces(self, g: &Gemm) -> u32 {
        self.bands(g).count() as u32
    }
}

impl Gemm {
    /// Whether a split of it can be planned at all: sizes in range, at least two steps along
    /// one of `m` and `n`, leading dimensions that hold what they must. Anything else is left
    /// whole (cuBLAS reports the invalid ones itself).
    pub(crate) fn splittable(&self) -> bool {
        let dims_ok = self.m > 0 && self.n > 0 && self.k > 0 && self.batch > 0;
        let lds_ok = self.lda > 0 && self.ldb > 0 && self.ldc >= self.m;
        dims_ok && lds_ok && self.bytes.iter().all(|b| *b > 0) && self.longest().is_some()
    }

    /// The axis to split along: the longer of `n` and `m` when it spans two steps or more
    /// (`n` when equal, and always `n` when only columns may be split).
    fn longest(&self) -> Option<Axis> {
        let (axis, len) = if self.n >= self.m || self.only_n {
            (Axis::N, self.n)
        } else {
            (Axis::M, self.m)
        };
        (len >= 2 * STEP).then_some(axis)
    }

    /// The split into about `pieces` pieces, each a multiple of [`STEP`] wide and at least
    /// `min_width`; `None` if that makes fewer than two.
    pub(crate) fn split(&self, pieces: u32, min_width: c_int) -> Option<Split> {
        if pieces < 2 || !self.splittable() {
            return None;
        }
        let axis = self.longest()?;
        let len = match axis {
            Axis::N => self.n,
            Axis::M => self.m,
        };
        let per = (len as u32).div_ceil(pieces) as c_int;
        let steps = |w: c_int| ((w + STEP - 1) / STEP).max(1) * STEP;
        let width = steps(per).max(steps(min_width));
        let split = Split { axis, width };
        (split.pieces(self) >= 2).then_some(split)
    }

    /// The narrowest piece that still gives the device `waves` rounds of work on `sms` SMs,
    /// counting tiles of `tile × tile` of C (cuBLAS's are 64 to 256 a side): a narrower one
    /// leaves SMs idle for the piece's whole `k` loop, and pieces cost more than the whole.
    pub(crate) fn min_width(&self, sms: u32, waves: u32, tile: u32) -> c_int {
        let other = match self.longest() {
            Some(Axis::M) => self.n,
            _ => self.m,
        }
        .max(1) as u64;
        let tiles = u64::from(sms) * u64::from(waves);
        let area = tiles * u64::from(tile) * u64::from(tile);
        let per_batch = area.div_ceil(other * self.batch.max(1) as u64);
        per_batch.min(i32::MAX as u64) as c_int
    }

    /// The piece of `g` that computes the band `[start, start + width)` along `axis`.
    pub(crate) fn piece(&self, axis: Axis, start: c_int, width: c_int) -> Gemm {
        let s = start as usize;
        let [ea, eb, ec] = self.bytes;
        let mut p = *self;
        match axis {
            Axis::N => {
                p.n = width;
                p.c += s * self.ldc as usize * ec;
                if let Some(c) = &mut p.c_in
                    && c.at != 0
                {
                    c.at += s * c.ld as usize * c.bytes;
                }
                // The band's columns of op(B): columns of B as stored, or its rows.
                p.b += if self.transb == OP_N {
                    s * self.ldb as usize * eb
                } else {
                    s * eb
                };
            }
            Axis::M => {
                p.m = width;
                p.c += s * ec;
                if let Some(c) = &mut p.c_in
                    && c.at != 0
                {
                    c.at += s * c.bytes;
                }
                p.a += if self.transa == OP_N {
                    s * ea
                } else {
                    s * self.lda as usize * ea
                };
            }
        }
        p
    }

    /// The bytes from `c` that the call writes or reads of `C`, for a copy of it: every matrix
    /// of the batch.
    pub(crate) fn c_extent(&self) -> usize {
        let one = (self.ldc as usize) * (self.n as usize - 1) + self.m as usize;
        let last = (self.batch as usize - 1) * self.stride_c.max(0) as usize;
        (one + last) * self.bytes[2]
    }

    /// The same call writing its result to `c` instead.
    pub(crate) fn with_c(&self, c: usize) -> Gemm {
        Gemm { c, ..*self }
    }

    /// How `A`, `B` and `C` are aligned (the low bits of their addresses, up to 256 bytes):
    /// cuBLAS chooses its kernels by alignment, so a check holds only for calls aligned alike.
    pub(crate) fn alignment(&self) -> [u16; 3] {
        [self.a, self.b, self.c].map(|p| (p % 256) as u16)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn gemm(transa: c_int, transb: c_int, m: c_int, n: c_int, k: c_int) -> Gemm {
        let lda = if transa == OP_N { m } else { k };
        let ldb = if transb == OP_N { k } else { n };
        Gemm {
            transa,
            transb,
            m,
            n,
            k,
            a: 1 << 20,
            lda,
            stride_a: 0,
            b: 2 << 20,
            ldb,
            stride_b: 0,
            c: 3 << 20,
            ldc: m,
            stride_c: 0,
            batch: 1,
            bytes: [2, 2, 2],
            only_n: false,
            c_in: None,
        }
    }

    #[test]
    fn an_8192_square_splits_along_n_in_bands_of_steps() {
        let g = gemm(OP_N, OP_N, 8192, 8192, 8192);
        let s = g.split(16, 0).expect("splits");
        assert_eq!(
            s,
            Split {
                axis: Axis::N,
                width: 512
            }
        );
        assert_eq!(s.pieces(&g), 16);
        let p = g.piece(Axis::N, 512, 512);
        assert_eq!((p.m, p.n, p.k), (8192, 512, 8192));
        assert_eq!(p.c, g.c + 512 * 8192 * 2);
        assert_eq!(p.b, g.b + 512 * 8192 * 2);
        assert_eq!(p.a, g.a);
    }

    #[test]
    fn small_or_single_piece_calls_stay_whole() {
        assert_eq!(gemm(OP_N, OP_N, 64, 200, 4096).split(8, 0), None);
        assert_eq!(gemm(OP_N, OP_N, 8192, 8192, 8192).split(1, 0), None);
        let mut bad = gemm(OP_N, OP_N, 1024, 1024, 64);
        bad.ldc = 10;
        assert_eq!(bad.split(4, 0), None);
    }

    #[test]
    fn pieces_are_wide_enough_to_fill_the_device() {
        // 8192 rows: two waves of 128 x 128 tiles on 132 SMs need 528 columns, 640 in steps.
        let g = gemm(OP_N, OP_N, 8192, 8192, 8192);
        let min = g.min_width(132, 2, 128);
        assert_eq!(min, 528);
        let s = g.split(64, min).expect("splits");
        assert_eq!(s.width, 640);
        assert_eq!(s.pieces(&g), 13);
        // 4096 rows need twice the width; a call too narrow for two such pieces stays whole.
        assert_eq!(
            gemm(OP_N, OP_N, 4096, 4096, 4096)
                .split(32, 1056)
                .map(|s| s.width),
            Some(1152)
        );
        let narrow = gemm(OP_N, OP_N, 1024, 1024, 1024);
        assert_eq!(narrow.split(8, narrow.min_width(132, 2, 128)), None);
    }

    #[test]
    fn a_tall_call_splits_along_m_and_moves_a_by_its_transposition() {
        let g = gemm(1, OP_N, 4096, 64, 1024);
        let s = g.split(4, 0).expect("splits");
        assert_eq!(s.axis, Axis::M);
        let p = g.piece(Axis::M, 1024, 1024);
        assert_eq!(p.a, g.a + 1024 * g.lda as usize * 2);
        assert_eq!(p.c, g.c + 1024 * 2);
        let g = gemm(OP_N, OP_N, 4096, 64, 1024);
        assert_eq!(g.piece(Axis::M, 1024, 1024).a, g.a + 1024 * 2);
    }

    #[test]
    fn a_call_that_may_only_be_split_by_columns_splits_a_tall_result_by_columns() {
        let mut g = gemm(OP_N, OP_N, 4096, 512, 1024);
        g.only_n = true;
        let s = g.split(4, 0).expect("splits");
        assert_eq!(s.axis, Axis::N);
        assert_eq!(s.width, 128);
        // An input C apart from D moves with D's columns, by its own leading dimension.
        g.c_in = Some(CIn {
            at: 9 << 20,
            ld: 5000,
            stride: 0,
            bytes: 4,
        });
        let p = g.piece(Axis::N, 256, 128);
        assert_eq!(p.c_in.map(|c| c.at), Some((9 << 20) + 256 * 5000 * 4));
        g.c_in = Some(CIn {
            at: 0,
            ..CIn::default()
        });
        assert_eq!(g.piece(Axis::N, 256, 128).c_in.map(|c| c.at), Some(0));
        // Too few columns for two steps: whole, however many rows.
        g.n = 200;
        assert_eq!(g.split(4, 0), None);
        assert!(!g.splittable());
    }

    /// One element of C, `(row, col)` of batch 0, as `(byte offset in C, byte offsets of the
    /// first elements of its row of op(A) and its column of op(B))`.
    fn element(g: &Gemm, row: usize, col: usize) -> (usize, usize, usize) {
        let [ea, eb, ec] = g.bytes;
        let c = g.c + (col * g.ldc as usize + row) * ec;
        let a = g.a
            + if g.transa == OP_N {
                row * ea
            } else {
                row * g.lda as usize * ea
            };
        let b = g.b
            + if g.transb == OP_N {
                col * g.ldb as usize * eb
            } else {
                col * eb
            };
        (c, a, b)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        /// Every element of C is computed by exactly one piece, from the same row of op(A)
        /// and column of op(B) as in the whole call, and every piece keeps k.
        #[test]
        fn pieces_cover_c_once_with_the_same_operands(
            m in 1..400i32, n in 1..400i32, k in 1..64i32,
            transa in 0..2i32, transb in 0..2i32, pieces in 2..40u32,
            ea in prop::sample::select(vec![1usize, 2, 4, 8]),
            ec in prop::sample::select(vec![2usize, 4]),
        ) {
            let mut g = gemm(transa, transb, m, n, k);
            g.bytes = [ea, ea, ec];
            let Some(split) = g.split(pieces, 0) else {
                prop_assert!(m.max(n) < 2 * STEP || pieces < 2);
                return Ok(());
            };
            prop_assert!(split.width % STEP == 0);
            let mut seen = std::collections::HashMap::new();
            for (start, width) in split.bands(&g) {
                let p = g.piece(split.axis, start, width);
                prop_assert_eq!(p.k, g.k);
                for row in 0..p.m as usize {
                    for col in 0..p.n as usize {
                        let here = element(&p, row, col);
                        let (r, c) = match split.axis {
                            Axis::N => (row, col + start as usize),
                            Axis::M => (row + start as usize, col),
                        };
                        prop_assert_eq!(here, element(&g, r, c));
                        prop_assert!(seen.insert(here.0, ()).is_none());
                    }
                }
            }
            prop_assert_eq!(seen.len(), (m * n) as usize);
        }
    }
}
