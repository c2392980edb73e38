//! cuBLASLt's `cublasLtMatmul`: `D = α·op(A)·op(B) + β·C`, then an epilogue, its operands'
//! shapes in opaque layouts and the rest in an opaque descriptor, both read through cuBLASLt's
//! own `GetAttribute` functions (only once the stream may be held: alone nothing is read).
//!
//! Only columns of `D` are split, and only where each column's result depends on nothing but
//! that column's operands as in the whole call: `C` is `D` (the same memory and layout, as
//! PyTorch passes them) or apart from it (as XLA passes them; its band moves with `D`'s), the
//! layouts are column-major and strided, the epilogue is none,
//! ReLU, GELU or a bias added to each row (a bias has one value per row of `D`, the same in
//! every band of columns), the scalars are one value each, and no maximum of `|D|` or
//! auxiliary output spans the whole result. Anything else is made whole. A piece is the same
//! call with the same descriptor and workspace (its pieces run one after another on the
//! stream), new layouts for its band of `B`, `C` and `D`, and cuBLASLt's own choice of
//! algorithm for that band; the check compares its bits with the whole call's as for cuBLAS.

// Device pointers are 64-bit integers and layout sizes `u64`; Baton runs on 64-bit Linux only.
#![allow(clippy::cast_possible_truncation)]

use std::ffi::{c_int, c_void};

use baton_cuda::sys::CUstream;

use super::found::{
    CUBLAS_STATUS_NOT_INITIALIZED, CUBLAS_STATUS_SUCCESS, Handle, LT_DESC_GET, LT_LAYOUT_CREATE,
    LT_LAYOUT_DESTROY, LT_LAYOUT_GET, LT_LAYOUT_SET, LT_MATMUL, real, type_bytes,
};
use super::plan::{CIn, Gemm, OP_N, STEP};

type Object = *mut c_void;
type MatmulFn = unsafe extern "C" fn(
    Object,
    Object,
    *const c_void,
    *const c_void,
    Object,
    *const c_void,
    Object,
    *const c_void,
    *const c_void,
    Object,
    *mut c_void,
    Object,
    *const c_void,
    *mut c_void,
    usize,
    CUstream,
) -> c_int;
type GetFn = unsafe extern "C" fn(Object, c_int, *mut c_void, usize, *mut usize) -> c_int;
type CreateFn = unsafe extern "C" fn(*mut Object, c_int, u64, u64, i64) -> c_int;
type SetFn = unsafe extern "C" fn(Object, c_int, *const c_void, usize) -> c_int;
type DestroyFn = unsafe extern "C" fn(Object) -> c_int;

/// `cublasLtMatmulDescAttributes_t`: what Baton reads, with each value's size in bytes.
mod desc {
    pub(super) const COMPUTE_TYPE: (i32, usize) = (0, 4);
    pub(super) const SCALE_TYPE: (i32, usize) = (1, 4);
    pub(super) const POINTER_MODE: (i32, usize) = (2, 4);
    pub(super) const TRANSA: (i32, usize) = (3, 4);
    pub(super) const TRANSB: (i32, usize) = (4, 4);
    pub(super) const TRANSC: (i32, usize) = (5, 4);
    pub(super) const EPILOGUE: (i32, usize) = (7, 4);
    pub(super) const BIAS_POINTER: (i32, usize) = (8, 8);
    pub(super) const SM_COUNT_TARGET: (i32, usize) = (15, 4);
    pub(super) const AMAX_D_POINTER: (i32, usize) = (21, 8);
    pub(super) const FAST_ACCUM: (i32, usize) = (25, 1);
    pub(super) const BIAS_DATA_TYPE: (i32, usize) = (26, 4);
    /// `A`, `B`, `C` and `D`'s scale modes (cuBLAS 12.8 on; 0: one scalar each).
    pub(super) const SCALE_MODES: [(i32, usize); 4] = [(31, 4), (32, 4), (33, 4), (34, 4)];
    pub(super) const D_OUT_SCALE_POINTER: (i32, usize) = (36, 8);
    pub(super) const EMULATION_DESCRIPTOR: (i32, usize) = (38, 8);
    pub(super) const ALPHA_BATCH_STRIDE: (i32, usize) = (39, 8);
    pub(super) const BETA_BATCH_STRIDE: (i32, usize) = (40, 8);
    pub(super) const BATCH_INVARIANCE_FLAGS: (i32, usize) = (41, 4);
}

/// `cublasLtMatrixLayoutAttribute_t`, as [`desc`].
mod layout {
    pub(super) const TYPE: (i32, usize) = (0, 4);
    pub(super) const ORDER: (i32, usize) = (1, 4);
    pub(super) const ROWS: (i32, usize) = (2, 8);
    pub(super) const COLS: (i32, usize) = (3, 8);
    pub(super) const LD: (i32, usize) = (4, 8);
    pub(super) const BATCH_COUNT: (i32, usize) = (5, 4);
    pub(super) const STRIDED_BATCH_OFFSET: (i32, usize) = (6, 8);
    pub(super) const PLANE_OFFSET: (i32, usize) = (7, 8);
    pub(super) const BATCH_MODE: (i32, usize) = (8, 4);
}

/// Epilogues that act on each element of `D` alone or add a bias per row: `DEFAULT`, `RELU`,
/// `BIAS`, `RELU_BIAS`, `GELU`, `GELU_BIAS`. The others write an auxiliary matrix or reduce
/// over columns (`*_AUX`, `D*`, `BGRAD*`).
const SAFE_EPILOGUES: [u64; 6] = [1, 2, 4, 6, 32, 36];
/// `CUBLASLT_POINTER_MODE_HOST` and `_DEVICE`: α and β one value each.
const SCALAR_POINTER_MODES: [u64; 2] = [0, 1];

/// One `cublasLtMatmul` call's arguments.
#[derive(Clone, Copy)]
pub(crate) struct Lt {
    handle: Handle,
    alpha: *const c_void,
    beta: *const c_void,
    desc: Object,
    /// The layouts of `A`, `B`, `C` and `D`.
    layouts: [Object; 4],
    /// `A`, `B`, `C` and `D` as the application passed them.
    operands: [usize; 4],
    algo: *const c_void,
    workspace: *mut c_void,
    workspace_bytes: usize,
    pub(super) stream: CUstream,
    /// The element types of `A`, `B`, `C` and `D` (read by [`Lt::parse`]).
    types: [c_int; 4],
}

/// The bytes a column-major matrix of `n` columns of `m` rows spans, over its batch.
fn extent(ld: u64, n: u64, m: u64, batch: u64, stride: i64, bytes: usize) -> usize {
    let one = ld.saturating_mul(n.saturating_sub(1)).saturating_add(m);
    let last = batch.saturating_sub(1).saturating_mul(stride.max(0) as u64);
    (one.saturating_add(last) as usize).saturating_mul(bytes)
}

/// How many words [`Parsed::extra`] has.
pub(super) const EXTRA: usize = 19;

/// A call's operands as read ([`Lt::parse`]): what a cuBLAS call's arguments give.
pub(super) struct Parsed {
    pub(super) gemm: Gemm,
    /// The types of `A`, `B` and `D`, `computeType` and `scaleType`.
    pub(super) types: [c_int; 5],
    /// Whatever else its kernels are chosen by: the epilogue, pointer mode, bias type, fast
    /// accumulation, SM target, alignments, workspace, emulation, batch strides of α and β,
    /// batch invariance, and the algorithm's eight words.
    pub(super) extra: [u64; EXTRA],
    pub(super) lt: Lt,
}

/// Why a cuBLASLt call is made whole before anything is planned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Unsplit {
    /// `D` has fewer columns than two pieces need.
    Narrow,
    /// Its descriptor or layouts rule pieces out: which rule.
    RuledOut(&'static str),
}

/// One layout as read.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Shape {
    type_: u64,
    rows: u64,
    cols: u64,
    ld: u64,
    batch: u64,
    stride: i64,
}

/// Reads attribute `(attr, size)` of a cuBLASLt object through `get` (`None` where cuBLASLt
/// does not have it: an older cuBLASLt, whose default it then is).
fn read(get: usize, obj: Object, (attr, size): (i32, usize)) -> Option<u64> {
    let mut value = [0u8; 8];
    let mut written = 0usize;
    // SAFETY: cuBLASLt's GetAttribute on the application's object, into a local of `size`
    // bytes (at most 8).
    let r = unsafe {
        std::mem::transmute::<usize, GetFn>(get)(
            obj,
            attr,
            value.as_mut_ptr().cast(),
            size,
            &mut written,
        )
    };
    (r == CUBLAS_STATUS_SUCCESS && written == size).then(|| {
        // Sign-extended: the 4-byte values are `int32_t` but for the epilogue, whose values
        // are all positive.
        match size {
            1 => i64::from(value[0] as i8) as u64,
            4 => i64::from(i32::from_le_bytes([value[0], value[1], value[2], value[3]])) as u64,
            _ => u64::from_le_bytes(value),
        }
    })
}

impl Lt {
    /// A call as the hook received it.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        (handle, alpha, beta): (Handle, *const c_void, *const c_void),
        desc: Object,
        layouts: [Object; 4],
        operands: [usize; 4],
        algo: *const c_void,
        workspace: *mut c_void,
        workspace_bytes: usize,
        stream: CUstream,
    ) -> Lt {
        Lt {
            handle,
            alpha,
            beta,
            desc,
            layouts,
            operands,
            algo,
            workspace,
            workspace_bytes,
            stream,
            types: [0; 4],
        }
    }

    /// The layout `i`'s shape; `None` unless column-major, strided and not planar.
    fn shape(&self, get: usize, i: usize) -> Option<Shape> {
        let l = self.layouts[i];
        if l.is_null() {
            return None;
        }
        let order = read(get, l, layout::ORDER).unwrap_or(0);
        let plane = read(get, l, layout::PLANE_OFFSET).unwrap_or(0);
        let mode = read(get, l, layout::BATCH_MODE).unwrap_or(0);
        if order != 0 || plane != 0 || mode != 0 {
            return None;
        }
        Some(Shape {
            type_: read(get, l, layout::TYPE)?,
            rows: read(get, l, layout::ROWS)?,
            cols: read(get, l, layout::COLS)?,
            ld: read(get, l, layout::LD)?,
            batch: read(get, l, layout::BATCH_COUNT).unwrap_or(1),
            stride: read(get, l, layout::STRIDED_BATCH_OFFSET).unwrap_or(0) as i64,
        })
    }

    /// The call with its operands read from the descriptors; [`Unsplit::Narrow`] for a result
    /// too narrow to split (the common case, known from two reads), [`Unsplit::RuledOut`] where
    /// the arguments rule pieces out (the module documentation says when).
    pub(super) fn parse(&self) -> Result<Parsed, Unsplit> {
        let d_layout = self.layouts[3];
        let cols = match real(LT_LAYOUT_GET) {
            Some(get) if !d_layout.is_null() => read(get, d_layout, layout::COLS),
            _ => None,
        };
        if cols.is_some_and(|n| n < 2 * STEP as u64) {
            return Err(Unsplit::Narrow);
        }
        self.parse_all().map_err(Unsplit::RuledOut)
    }

    fn parse_all(&self) -> Result<Parsed, &'static str> {
        let found = |i| real(i).ok_or("a cuBLASLt function not found");
        let get_desc = found(LT_DESC_GET)?;
        let get_layout = found(LT_LAYOUT_GET)?;
        // The functions pieces need, found before anything is split.
        found(LT_LAYOUT_CREATE)?;
        found(LT_LAYOUT_SET)?;
        found(LT_LAYOUT_DESTROY)?;
        let d = |attr| read(get_desc, self.desc, attr);
        let epilogue = d(desc::EPILOGUE).unwrap_or(1);
        let pointer_mode = d(desc::POINTER_MODE).unwrap_or(0);
        let scalars = desc::SCALE_MODES.iter().all(|m| d(*m).unwrap_or(0) == 0);
        let spans_d = d(desc::AMAX_D_POINTER).unwrap_or(0) != 0
            || d(desc::D_OUT_SCALE_POINTER).unwrap_or(0) != 0;
        let rule = |holds: bool, why| if holds { Ok(()) } else { Err(why) };
        rule(SAFE_EPILOGUES.contains(&epilogue), "epilogue")?;
        rule(SCALAR_POINTER_MODES.contains(&pointer_mode), "pointer mode")?;
        rule(scalars, "scale mode")?;
        rule(!spans_d, "amax or block-scaled D")?;
        rule(d(desc::TRANSC).unwrap_or(0) == 0, "transc")?;
        let [a, b, c, dd] = self.operands;
        let [sa, sb, sc, sd] = [0, 1, 2, 3].map(|i| self.shape(get_layout, i));
        let layout = "a layout not column-major and strided";
        let (sa, sb, sd) = (sa.ok_or(layout)?, sb.ok_or(layout)?, sd.ok_or(layout)?);
        let sc = sc.ok_or(layout)?;
        // C is D (the same memory, laid out alike), or C is apart from D, of D's shape.
        if c == dd {
            rule(sc == sd, "C laid out apart from D")?;
        } else {
            rule(
                (sc.rows, sc.cols, sc.batch) == (sd.rows, sd.cols, sd.batch),
                "C shaped apart from D",
            )?;
        }
        let transa = d(desc::TRANSA).unwrap_or(0) as c_int;
        let transb = d(desc::TRANSB).unwrap_or(0) as c_int;
        let (m, n) = (sd.rows, sd.cols);
        let (am, k) = if transa == OP_N {
            (sa.rows, sa.cols)
        } else {
            (sa.cols, sa.rows)
        };
        let (bk, bn) = if transb == OP_N {
            (sb.rows, sb.cols)
        } else {
            (sb.cols, sb.rows)
        };
        let batch = sd.batch;
        rule(
            am == m && bk == k && bn == n && sa.batch == batch && sb.batch == batch,
            "shapes that do not match",
        )?;
        let int = |v: u64| c_int::try_from(v).map_err(|_| "sizes beyond int");
        let ty = |s: &Shape| c_int::try_from(s.type_).map_err(|_| "a type beyond int");
        let types = [ty(&sa)?, ty(&sb)?, ty(&sc)?, ty(&sd)?];
        let bytes = [types[0], types[1], types[3]].map(|t| type_bytes(t).unwrap_or(0));
        let c_in = if c == dd {
            None
        } else {
            let c_in = CIn {
                at: c,
                ld: int(sc.ld)?,
                stride: sc.stride,
                bytes: type_bytes(types[2]).ok_or("an unknown type of C")?,
            };
            // Apart, or a piece of C could be a piece of D another piece has written.
            let d_extent = extent(sd.ld, n, m, batch, sd.stride, bytes[2]);
            let c_extent = extent(sc.ld, n, m, batch, sc.stride, c_in.bytes);
            let overlap =
                c != 0 && c < dd.saturating_add(d_extent) && dd < c.saturating_add(c_extent);
            rule(!overlap, "C overlapping D")?;
            Some(c_in)
        };
        let gemm = Gemm {
            transa,
            transb,
            m: int(m)?,
            n: int(n)?,
            k: int(k)?,
            a,
            lda: int(sa.ld)?,
            stride_a: sa.stride,
            b,
            ldb: int(sb.ld)?,
            stride_b: sb.stride,
            c: dd,
            ldc: int(sd.ld)?,
            stride_c: sd.stride,
            batch: int(batch)?,
            bytes,
            only_n: true,
            c_in,
        };
        let compute = d(desc::COMPUTE_TYPE).ok_or("no compute type")? as c_int;
        let scale = d(desc::SCALE_TYPE).unwrap_or(compute as u64) as c_int;
        let mut extra = [0u64; EXTRA];
        let algo = if self.algo.is_null() {
            [0u64; 8]
        } else {
            // SAFETY: a `cublasLtMatmulAlgo_t` (eight 64-bit words) the application passed.
            unsafe { std::ptr::read_unaligned(self.algo.cast::<[u64; 8]>()) }
        };
        let bias = d(desc::BIAS_POINTER).unwrap_or(0);
        let head = [
            epilogue,
            pointer_mode,
            (d(desc::BIAS_DATA_TYPE).unwrap_or(u64::MAX) & 0xffff_ffff)
                | (c_in.map_or(0, |ci| ci.ld as u64) << 32),
            d(desc::FAST_ACCUM).unwrap_or(0),
            d(desc::SM_COUNT_TARGET).unwrap_or(0),
            (bias % 256) | (u64::from(self.algo.is_null()) << 8) | ((c as u64 % 256) << 16),
            self.workspace_bytes as u64,
            d(desc::EMULATION_DESCRIPTOR).unwrap_or(0),
            d(desc::ALPHA_BATCH_STRIDE).unwrap_or(0),
            d(desc::BETA_BATCH_STRIDE).unwrap_or(0),
            d(desc::BATCH_INVARIANCE_FLAGS).unwrap_or(0),
        ];
        extra[..head.len()].copy_from_slice(&head);
        extra[head.len()..].copy_from_slice(&algo);
        Ok(Parsed {
            gemm,
            types: [types[0], types[1], types[3], compute, scale],
            extra,
            lt: Lt { types, ..*self },
        })
    }

    /// The call exactly as the application made it.
    pub(super) fn run_as_made(&self) -> c_int {
        let [a, b, c, d] = self.operands;
        let [la, lb, lc, ld] = self.layouts;
        self.matmul([a, b, c, d], [la, lb, lc, ld])
    }

    /// Makes `g` (of the parsed call whose operands are `whole`): the call as made, on `g`'s
    /// pointers (the check's copy of `D`), or a band of its columns with layouts of its own.
    pub(super) fn run(&self, whole: &Gemm, g: &Gemm) -> c_int {
        let c = g.c_in.map_or(g.c, |c| c.at);
        if (g.m, g.n) == (whole.m, whole.n) {
            let [la, lb, lc, ld] = self.layouts;
            return self.matmul([g.a, g.b, c, g.c], [la, lb, lc, ld]);
        }
        let (brows, bcols) = if g.transb == OP_N {
            (g.k, g.n)
        } else {
            (g.n, g.k)
        };
        let b = Piece::new(self.types[1], brows, bcols, g.ldb, g.batch, g.stride_b);
        let d = Piece::new(self.types[3], g.m, g.n, g.ldc, g.batch, g.stride_c);
        let c_layout = g
            .c_in
            .map(|ci| Piece::new(self.types[2], g.m, g.n, ci.ld, g.batch, ci.stride))
            .transpose();
        match (b, c_layout, d) {
            (Ok(b), Ok(c_layout), Ok(d)) => self.matmul_with(
                [g.a, g.b, c, g.c],
                [
                    self.layouts[0],
                    b.0,
                    c_layout.as_ref().map_or(d.0, |l| l.0),
                    d.0,
                ],
                std::ptr::null(),
            ),
            (Err(r), _, _) | (_, Err(r), _) | (_, _, Err(r)) => r,
        }
    }

    fn matmul(&self, operands: [usize; 4], layouts: [Object; 4]) -> c_int {
        self.matmul_with(operands, layouts, self.algo)
    }

    /// `cublasLtMatmul` with `algo`: the application's for the whole call; none (cuBLASLt's
    /// heuristic for the piece's shape, as cuBLAS's own GEMMs choose) for a piece, since an
    /// algorithm chosen for the whole runs a narrow band slowly (an 8192³ bf16 `Linear` on an
    /// H200 took 1.5 times as long in pieces with the whole call's algorithm). The check finds
    /// whether the pieces give the whole call's bits.
    fn matmul_with(
        &self,
        [a, b, c, d]: [usize; 4],
        [la, lb, lc, ld]: [Object; 4],
        algo: *const c_void,
    ) -> c_int {
        let Some(f) = real(LT_MATMUL) else {
            return CUBLAS_STATUS_NOT_INITIALIZED;
        };
        // SAFETY: cuBLASLt's cublasLtMatmul (found under its name) with the application's
        // arguments, or a piece's: the same descriptor, scalars, workspace and stream, the
        // application's algorithm or none (cuBLASLt chooses), operands moved to a band of
        // columns that lies inside the matrices the whole call names (`plan`), laid out as
        // that band.
        unsafe {
            std::mem::transmute::<usize, MatmulFn>(f)(
                self.handle,
                self.desc,
                self.alpha,
                a as *const c_void,
                la,
                b as *const c_void,
                lb,
                self.beta,
                c as *const c_void,
                lc,
                d as *mut c_void,
                ld,
                algo,
                self.workspace,
                self.workspace_bytes,
                self.stream,
            )
        }
    }
}

/// A layout made for a piece, destroyed with it.
struct Piece(Object);

impl Piece {
    fn new(
        ty: c_int,
        rows: c_int,
        cols: c_int,
        ld: c_int,
        batch: c_int,
        stride: i64,
    ) -> Result<Piece, c_int> {
        let (Some(create), Some(set)) = (real(LT_LAYOUT_CREATE), real(LT_LAYOUT_SET)) else {
            return Err(CUBLAS_STATUS_NOT_INITIALIZED);
        };
        let mut l: Object = std::ptr::null_mut();
        let dim = |v: c_int| u64::try_from(v).unwrap_or(0);
        // SAFETY: cuBLASLt's cublasLtMatrixLayoutCreate into a local.
        let r = unsafe {
            std::mem::transmute::<usize, CreateFn>(create)(
                &mut l,
                ty,
                dim(rows),
                dim(cols),
                i64::from(ld),
            )
        };
        if r != CUBLAS_STATUS_SUCCESS {
            return Err(r);
        }
        let piece = Piece(l);
        if batch > 1 {
            let set = |(attr, _): (i32, usize), value: &[u8]| {
                // SAFETY: cuBLASLt's SetAttribute on the layout just made, from a local of
                // the attribute's size.
                unsafe {
                    std::mem::transmute::<usize, SetFn>(set)(
                        piece.0,
                        attr,
                        value.as_ptr().cast(),
                        value.len(),
                    )
                }
            };
            for r in [
                set(layout::BATCH_COUNT, &batch.to_le_bytes()),
                set(layout::STRIDED_BATCH_OFFSET, &stride.to_le_bytes()),
            ] {
                if r != CUBLAS_STATUS_SUCCESS {
                    return Err(r);
                }
            }
        }
        Ok(piece)
    }
}

impl Drop for Piece {
    fn drop(&mut self) {
        if let Some(destroy) = real(LT_LAYOUT_DESTROY) {
            // SAFETY: a layout this piece made; cuBLASLt reads layouts only during the call
            // that names them, which has returned.
            unsafe { std::mem::transmute::<usize, DestroyFn>(destroy)(self.0) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `GetAttribute` that knows attribute 1 (4 bytes, -2), 2 (1 byte, -1) and 3 (8 bytes),
    /// and refuses any other or any size but the attribute's, as cuBLASLt does.
    unsafe extern "C" fn get(
        _obj: Object,
        attr: c_int,
        buf: *mut c_void,
        size: usize,
        written: *mut usize,
    ) -> c_int {
        let value: &[u8] = match attr {
            1 => &(-2i32).to_le_bytes(),
            2 => &[0xff],
            3 => &0x1234_5678_9abc_def0u64.to_le_bytes(),
            _ => return 7,
        };
        if size != value.len() {
            return 7;
        }
        // SAFETY: `read` passes a buffer of `size` bytes and a place for the count.
        unsafe {
            std::ptr::copy_nonoverlapping(value.as_ptr(), buf.cast::<u8>(), size);
            *written = size;
        }
        0
    }

    #[test]
    fn attributes_are_read_at_their_size_and_signed_values_extended() {
        let f = get as *const () as usize;
        let obj = std::ptr::null_mut();
        assert_eq!(read(f, obj, (1, 4)), Some(-2i64 as u64));
        assert_eq!(read(f, obj, (2, 1)), Some(u64::MAX));
        assert_eq!(read(f, obj, (3, 8)), Some(0x1234_5678_9abc_def0));
        // A size other than the attribute's, or an attribute this cuBLASLt lacks: unknown.
        assert_eq!(read(f, obj, (1, 8)), None);
        assert_eq!(read(f, obj, (31, 4)), None);
    }

    #[test]
    fn a_matrix_spans_its_last_column_and_batch() {
        // 4 rows of 3 columns in a leading dimension of 10, 4-byte elements: 2 * 10 + 4.
        assert_eq!(extent(10, 3, 4, 1, 0, 4), 24 * 4);
        // Two of them 100 elements apart.
        assert_eq!(extent(10, 3, 4, 2, 100, 4), 124 * 4);
        // A broadcast batch (stride 0) spans one.
        assert_eq!(extent(10, 3, 4, 8, 0, 2), 24 * 2);
    }

    #[test]
    fn only_elementwise_and_row_bias_epilogues_are_safe() {
        // DEFAULT, RELU, BIAS, RELU_BIAS, GELU, GELU_BIAS.
        for e in [1, 2, 4, 6, 32, 36] {
            assert!(SAFE_EPILOGUES.contains(&e));
        }
        // RELU_AUX, RELU_AUX_BIAS, DRELU, DRELU_BGRAD, GELU_AUX, GELU_AUX_BIAS, DGELU,
        // DGELU_BGRAD, BGRADA, BGRADB.
        for e in [130, 134, 136, 152, 160, 164, 192, 208, 256, 512] {
            assert!(!SAFE_EPILOGUES.contains(&e), "{e}");
        }
    }
}
