/work/wt-async/target-v0/wasm32-unknown-unknown/release/deps/scopeguard-6114c7f5f2b50613.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/scopeguard-1.2.0/src/lib.rs

/work/wt-async/target-v0/wasm32-unknown-unknown/release/deps/libscopeguard-6114c7f5f2b50613.rlib: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/scopeguard-1.2.0/src/lib.rs

/work/wt-async/target-v0/wasm32-unknown-unknown/release/deps/libscopeguard-6114c7f5f2b50613.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/scopeguard-1.2.0/src/lib.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/scopeguard-1.2.0/src/lib.rs:
