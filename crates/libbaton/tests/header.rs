//! `include/baton.h` is what cbindgen generates from this crate and `baton-capi` now: a
//! change to the ABI that forgot the header fails here. `BATON_BLESS=1` rewrites it.

use std::path::Path;

#[test]
fn the_header_is_generated_from_the_code() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let header = crate_dir.join("../../include/baton.h");
    let config =
        cbindgen::Config::from_file(crate_dir.join("cbindgen.toml")).expect("read cbindgen.toml");
    let mut generated = Vec::new();
    cbindgen::Builder::new()
        .with_crate(crate_dir)
        .with_config(config)
        .generate()
        .expect("generate the header")
        .write(&mut generated);
    let generated = String::from_utf8(generated).expect("a UTF-8 header");
    if std::env::var_os("BATON_BLESS").is_some() {
        std::fs::write(&header, &generated).expect("write include/baton.h");
        return;
    }
    let committed = std::fs::read_to_string(&header).unwrap_or_default();
    assert!(
        committed == generated,
        "include/baton.h is not what cbindgen generates from the code; run \
         `BATON_BLESS=1 cargo test -p baton-libbaton --test header` and commit it"
    );
}
