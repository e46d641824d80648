/work/wt-async/target-v0/wasm32-unknown-unknown/release/deps/wasm_bindgen_shared-f5c9cdabc5b137eb.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/wasm-bindgen-shared-0.2.130/src/lib.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/wasm-bindgen-shared-0.2.130/src/identifier.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/wasm-bindgen-shared-0.2.130/src/tys.rs

/work/wt-async/target-v0/wasm32-unknown-unknown/release/deps/libwasm_bindgen_shared-f5c9cdabc5b137eb.rlib: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/wasm-bindgen-shared-0.2.130/src/lib.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/wasm-bindgen-shared-0.2.130/src/identifier.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/wasm-bindgen-shared-0.2.130/src/tys.rs

/work/wt-async/target-v0/wasm32-unknown-unknown/release/deps/libwasm_bindgen_shared-f5c9cdabc5b137eb.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/wasm-bindgen-shared-0.2.130/src/lib.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/wasm-bindgen-shared-0.2.130/src/identifier.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/wasm-bindgen-shared-0.2.130/src/tys.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/wasm-bindgen-shared-0.2.130/src/lib.rs:
/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/wasm-bindgen-shared-0.2.130/src/identifier.rs:
/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/wasm-bindgen-shared-0.2.130/src/tys.rs:

# env-dep:CARGO_PKG_VERSION=0.2.130
# env-dep:WBG_VERSION
