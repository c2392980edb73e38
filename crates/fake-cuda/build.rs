//! Link flags of the fake driver.
//!
//! - `-Bsymbolic`: the fake's calls to its own functions bind inside the library. Without it a
//!   preloaded interposer would capture the fake's internal calls, and a broken interposer
//!   could pass the tests.
//! - `-soname,libcuda.so.1`: tests expose the library as `libcuda.so.1`, and programs linked with
//!   `-lcuda` against it record that name, as they do against the real driver.
//! - `-z nodelete`: stream worker threads run code of this library until the process exits, so
//!   it must never be unmapped by `dlclose`.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let target_os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if target_os == "linux" {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-Bsymbolic");
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libcuda.so.1");
        println!("cargo:rustc-cdylib-link-arg=-Wl,-z,nodelete");
    }
}
