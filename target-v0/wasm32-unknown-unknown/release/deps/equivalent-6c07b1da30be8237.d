/work/wt-async/target-v0/wasm32-unknown-unknown/release/deps/equivalent-6c07b1da30be8237.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/equivalent-1.0.3/src/lib.rs

/work/wt-async/target-v0/wasm32-unknown-unknown/release/deps/libequivalent-6c07b1da30be8237.rlib: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/equivalent-1.0.3/src/lib.rs

/work/wt-async/target-v0/wasm32-unknown-unknown/release/deps/libequivalent-6c07b1da30be8237.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/equivalent-1.0.3/src/lib.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/equivalent-1.0.3/src/lib.rs:
