/work/wt-async/target-v0/wasm32-unknown-unknown/release/deps/pin_project_lite-c4c13164525826ef.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/pin-project-lite-0.2.18/src/lib.rs

/work/wt-async/target-v0/wasm32-unknown-unknown/release/deps/libpin_project_lite-c4c13164525826ef.rlib: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/pin-project-lite-0.2.18/src/lib.rs

/work/wt-async/target-v0/wasm32-unknown-unknown/release/deps/libpin_project_lite-c4c13164525826ef.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/pin-project-lite-0.2.18/src/lib.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/pin-project-lite-0.2.18/src/lib.rs:
