//! DPAS host browser loop (pure core + wasm-bindgen layer). See issue #6.
