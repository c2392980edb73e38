//! cuBLAS and cuBLASLt GEMMs split into pieces under Baton (the interposer's `blas` module),
//! against a fake cuBLAS built on a fake cuBLASLt (`tests/data/fake_cublas.c`,
//! `fake_cublaslt.c`) over the fake driver: the result is the native one's, bit for bit,
//! whether the calls are split, left whole because pieces would differ or their arguments rule
//! pieces out, or left alone because nothing could hold the stream back; reached by linking
//! (as PyTorch and CuPy reach cuBLAS) and by `dlsym` (as JAX does). cuBLAS's `cublasGemmEx`
//! reaches cuBLASLt's `cublasLtMatmul` as the real one does, so every test also shows that the
//! call cuBLAS makes inside Baton's is made as cuBLAS made it.

mod support;

use std::path::Path;

use serde_json::Value;
use support::{Run, cublas_dir, driver_dir, gemm_app as app, interposer_library, run, temp_dir};

fn path(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 path")
}

struct Gemms {
    run: Run,
    /// The interposer's report (`Null` natively).
    report: Value,
}

/// Runs the app (natively unless `baton`) with `args` and `env`, the fake cuBLAS taking 250 µs
/// of device time per column of C (256 ms for a 1024-column call, beyond its arithmetic: long
/// against a loaded machine's scheduling delays, which the check's 5 % cost bound would
/// otherwise see), in pieces of 25 ms, on a device of 4 SMs (so that a piece that fills it twice with 128 × 128
/// tiles of a 256-row result, 512 columns, leaves room for two).
fn gemms(linked: bool, baton: bool, args: &[&str], env: &[(&str, &str)]) -> Gemms {
    let libs = format!("{}:{}", path(cublas_dir()), path(driver_dir()));
    let report_path = temp_dir("gemm-report").join("report.json");
    let preload = path(interposer_library()).to_owned();
    let report = path(&report_path).to_owned();
    let mut all: Vec<(&str, &str)> = vec![
        ("LD_LIBRARY_PATH", &libs),
        ("FAKE_CUBLAS_NS_PER_COLUMN", "250000"),
        ("BATON_GEMM_PIECE_US", "25000"),
        ("FAKE_CUDA_SMS", "4"),
    ];
    if baton {
        all.push(("LD_PRELOAD", &preload));
        all.push(("BATON_REPORT", &report));
    }
    all.extend_from_slice(env);
    let exe = app(linked);
    let run = run(path(&exe), args, &all);
    let report = std::fs::read_to_string(&report_path)
        .ok()
        .and_then(|t| t.lines().last().map(str::to_owned))
        .map_or(Value::Null, |l| {
            serde_json::from_str(&l).expect("a JSON report")
        });
    Gemms { run, report }
}

fn gemm_counts(report: &Value) -> (u64, u64, u64, u64) {
    let g = &report["gemm"];
    let n = |k: &str| g[k].as_u64().unwrap_or_else(|| panic!("gemm.{k} in {g}"));
    (n("calls"), n("split_calls"), n("pieces"), n("checks"))
}

fn verdicts(report: &Value) -> Vec<String> {
    shapes(report)
        .iter()
        .map(|s| s["verdict"].as_str().expect("a verdict").to_owned())
        .collect()
}

fn shapes(report: &Value) -> &[Value] {
    report["gemm"]["shapes"].as_array().expect("gemm.shapes")
}

#[test]
fn beside_a_more_urgent_stream_gemms_are_split_and_their_results_are_the_native_ones() {
    for linked in [true, false] {
        let native = gemms(linked, false, &["service"], &[]);
        let expected = native.run.line().to_owned();
        let baton = gemms(linked, true, &["service"], &[]);
        assert_eq!(baton.run.line(), expected, "linked {linked}");
        let (calls, split, pieces, checks) = gemm_counts(&baton.report);
        // Three shapes (one per entry point), each checked once and split every time.
        assert_eq!((calls, checks), (9, 3), "{}", baton.report["gemm"]);
        assert_eq!(split, 9, "{}", baton.report["gemm"]);
        assert_eq!(verdicts(&baton.report), ["split"; 3]);
        // Each call in as many pieces as its check chose, from its measured time (256 ms and
        // more, 512 ms for the batch of two, in 25 ms pieces) and the narrowest piece that fills
        // 4 SMs twice (512 columns; 256 for the batch of two): two pieces, four for the batch.
        let per_shape: Vec<u64> = shapes(&baton.report)
            .iter()
            .map(|s| s["pieces"].as_u64().expect("pieces"))
            .collect();
        assert_eq!(per_shape, [2, 2, 4]);
        assert_eq!(
            pieces,
            3 * per_shape.iter().sum::<u64>(),
            "{}",
            baton.report["gemm"]
        );
        baton.run.log.assert_streams_fifo();
        baton.run.log.assert_no_errors();
    }
}

#[test]
fn a_shape_whose_pieces_would_round_differently_is_never_split() {
    // Calls narrower than 1 000 columns sum k in two halves: a 512-column piece of a
    // 1024-column call would not give the whole call's bits.
    let env = [("FAKE_CUBLAS_SPLITK_BELOW_N", "1000")];
    let native = gemms(true, false, &["service"], &env);
    let baton = gemms(true, true, &["service"], &env);
    assert_eq!(baton.run.line(), native.run.line());
    let (calls, split, pieces, checks) = gemm_counts(&baton.report);
    assert_eq!(
        (calls, split, pieces, checks),
        (9, 0, 0, 3),
        "{}",
        baton.report["gemm"]
    );
    assert_eq!(verdicts(&baton.report), ["differs"; 3]);
}

#[test]
fn alone_nothing_is_split_or_checked() {
    let native = gemms(true, false, &[], &[]);
    let baton = gemms(true, true, &[], &[]);
    assert_eq!(baton.run.line(), native.run.line());
    let (calls, split, _, checks) = gemm_counts(&baton.report);
    assert_eq!(
        (calls, split, checks),
        (9, 0, 0),
        "{}",
        baton.report["gemm"]
    );
}

#[test]
fn splitting_turned_off_leaves_every_call_whole() {
    let baton = gemms(true, true, &["service"], &[("BATON_GEMM_PIECE_US", "0")]);
    let native = gemms(true, false, &["service"], &[]);
    assert_eq!(baton.run.line(), native.run.line());
    let (calls, split, _, checks) = gemm_counts(&baton.report);
    assert_eq!(
        (calls, split, checks),
        (0, 0, 0),
        "{}",
        baton.report["gemm"]
    );
}

#[test]
fn a_check_slowed_once_by_another_programs_kernels_still_splits() {
    // The fake's 5th and 6th runs are the first check's first timed pieces (after the whole
    // call's warm-up and timing and the pieces' warm-up); four times as slow, as beside another
    // program's kernels, they alone would make the pieces cost four times the whole.
    let env = [("FAKE_CUBLAS_SLOW_RUNS", "5,6")];
    let native = gemms(true, false, &["service"], &[]);
    let baton = gemms(true, true, &["service"], &env);
    assert_eq!(baton.run.line(), native.run.line());
    assert_eq!(
        verdicts(&baton.report),
        ["split"; 3],
        "{}",
        baton.report["gemm"]
    );
    let first = &shapes(&baton.report)[0];
    let (whole, split) = (
        first["whole_us"].as_f64().expect("whole_us"),
        first["split_us"].as_f64().expect("split_us"),
    );
    // The fastest timing of each side: the pieces cost what the whole does, not four times it.
    assert!(split < whole * 1.05, "{first}");
    baton.run.log.assert_no_errors();
}

#[test]
fn beside_a_more_urgent_stream_cublaslt_matmuls_are_split_where_their_epilogues_allow() {
    for linked in [true, false] {
        let native = gemms(linked, false, &["service", "lt"], &[]);
        let expected = native.run.line().to_owned();
        let baton = gemms(linked, true, &["service", "lt"], &[]);
        assert_eq!(baton.run.line(), expected, "linked {linked}");
        let g = &baton.report["gemm"];
        let (calls, split, pieces, checks) = gemm_counts(&baton.report);
        // Five calls a round: a bias per row, ReLU of a transposed product, a strided batch
        // and C apart from D (each checked once and split every time), and the maximum of |D|
        // (ruled out, never checked).
        assert_eq!((calls, checks, split), (15, 4, 12), "{g}");
        assert_eq!(g["ruled_out"].as_u64(), Some(3), "{g}");
        assert_eq!(
            g["ruled_out_why"],
            serde_json::json!({"amax or block-scaled D": 3}),
            "{g}"
        );
        assert_eq!(verdicts(&baton.report), ["split"; 4]);
        let entries: Vec<&str> = shapes(&baton.report)
            .iter()
            .map(|s| s["entry"].as_str().expect("entry"))
            .collect();
        assert_eq!(entries, ["lt_matmul"; 4]);
        let per_shape: Vec<u64> = shapes(&baton.report)
            .iter()
            .map(|s| s["pieces"].as_u64().expect("pieces"))
            .collect();
        assert_eq!(per_shape, [2, 2, 4, 2]);
        assert_eq!(pieces, 3 * per_shape.iter().sum::<u64>(), "{g}");
        baton.run.log.assert_streams_fifo();
        baton.run.log.assert_no_errors();
    }
}

#[test]
fn a_cublaslt_shape_whose_pieces_would_round_differently_is_never_split() {
    let env = [("FAKE_CUBLAS_SPLITK_BELOW_N", "1000")];
    let native = gemms(true, false, &["service", "lt"], &env);
    let baton = gemms(true, true, &["service", "lt"], &env);
    assert_eq!(baton.run.line(), native.run.line());
    let (calls, split, pieces, checks) = gemm_counts(&baton.report);
    assert_eq!(
        (calls, split, pieces, checks),
        (15, 0, 0, 4),
        "{}",
        baton.report["gemm"]
    );
    assert_eq!(verdicts(&baton.report), ["differs"; 4]);
}

#[test]
fn alone_no_cublaslt_descriptor_is_even_read() {
    let native = gemms(false, false, &["lt"], &[]);
    let baton = gemms(false, true, &["lt"], &[]);
    assert_eq!(baton.run.line(), native.run.line());
    let g = &baton.report["gemm"];
    let (calls, split, _, checks) = gemm_counts(&baton.report);
    assert_eq!((calls, split, checks), (15, 0, 0), "{g}");
    assert_eq!(g["ruled_out"].as_u64(), Some(0), "{g}");
}
