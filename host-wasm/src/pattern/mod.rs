//! JSON Schema `pattern`: an ECMAScript regular expression, matched unanchored.
//!
//! In the browser it is the browser's own `RegExp` (Unicode mode, as JSON Schema validators
//! use it): exact ECMAScript semantics, and no regex engine in the package. Natively (the
//! core's tests, any non-wasm host) it is `native`'s small backtracking matcher for the subset
//! the demo and the tests use; it refuses what it does not implement at compile time.

#[cfg(not(target_arch = "wasm32"))]
mod native;
#[cfg(not(target_arch = "wasm32"))]
pub use native::Pattern;

#[cfg(target_arch = "wasm32")]
pub use browser::Pattern;

#[cfg(target_arch = "wasm32")]
mod browser {
    use wasm_bindgen::prelude::*;

    #[wasm_bindgen]
    extern "C" {
        type RegExp;
        #[wasm_bindgen(constructor, catch)]
        fn new(source: &str, flags: &str) -> Result<RegExp, JsValue>;
        #[wasm_bindgen(method)]
        fn test(this: &RegExp, text: &str) -> bool;
    }

    /// A compiled pattern: `new RegExp(source, "u")`.
    pub struct Pattern(RegExp);

    impl Pattern {
        /// Compiles a pattern; a syntax error is refused.
        pub fn compile(source: &str) -> Result<Self, String> {
            RegExp::new(source, "u").map(Self).map_err(|_| {
                ["pattern \"", source, "\" is not a valid regular expression"].concat()
            })
        }

        /// Whether the pattern matches anywhere in `text` (no `g` flag: `test` keeps no state).
        pub fn is_match(&self, text: &str) -> bool {
            self.0.test(text)
        }
    }
}
