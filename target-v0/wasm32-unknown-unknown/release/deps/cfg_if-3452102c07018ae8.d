/work/wt-async/target-v0/wasm32-unknown-unknown/release/deps/cfg_if-3452102c07018ae8.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/cfg-if-1.0.5/src/lib.rs

/work/wt-async/target-v0/wasm32-unknown-unknown/release/deps/libcfg_if-3452102c07018ae8.rlib: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/cfg-if-1.0.5/src/lib.rs

/work/wt-async/target-v0/wasm32-unknown-unknown/release/deps/libcfg_if-3452102c07018ae8.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/cfg-if-1.0.5/src/lib.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/cfg-if-1.0.5/src/lib.rs:
