/work/wt-async/target-v0/wasm32-unknown-unknown/release/deps/js_sys-d8bb225f9430a4d3.d: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/js-sys-0.3.107/src/lib.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/js-sys-0.3.107/src/futures/mod.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/js-sys-0.3.107/src/futures/jspi.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/js-sys-0.3.107/src/futures/queue.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/js-sys-0.3.107/src/futures/task/singlethread.rs

/work/wt-async/target-v0/wasm32-unknown-unknown/release/deps/libjs_sys-d8bb225f9430a4d3.rlib: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/js-sys-0.3.107/src/lib.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/js-sys-0.3.107/src/futures/mod.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/js-sys-0.3.107/src/futures/jspi.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/js-sys-0.3.107/src/futures/queue.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/js-sys-0.3.107/src/futures/task/singlethread.rs

/work/wt-async/target-v0/wasm32-unknown-unknown/release/deps/libjs_sys-d8bb225f9430a4d3.rmeta: /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/js-sys-0.3.107/src/lib.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/js-sys-0.3.107/src/futures/mod.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/js-sys-0.3.107/src/futures/jspi.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/js-sys-0.3.107/src/futures/queue.rs /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/js-sys-0.3.107/src/futures/task/singlethread.rs

/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/js-sys-0.3.107/src/lib.rs:
/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/js-sys-0.3.107/src/futures/mod.rs:
/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/js-sys-0.3.107/src/futures/jspi.rs:
/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/js-sys-0.3.107/src/futures/queue.rs:
/root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/js-sys-0.3.107/src/futures/task/singlethread.rs:
