//! `@dpas/host`: the wasm-bindgen binding of [`dpas_host_core`]. The core holds every rule;
//! this crate ([`web`], wasm32 only) reads JS values into the core's types, wraps JS functions
//! into its traits (`fetch`, `performance.now()`, `MessageChannel`, `AbortSignal`, `RegExp`)
//! and converts the results back. Natively it is empty.

#[cfg(target_arch = "wasm32")]
pub mod web;

/// The browser build's allocator (see Cargo.toml): talc in place of std's dlmalloc.
#[cfg(all(target_arch = "wasm32", not(target_feature = "atomics")))]
#[global_allocator]
static TALC: talc::wasm::WasmDynamicTalc = talc::wasm::new_wasm_dynamic_allocator();
