//! The core's `PatternEngine` as the browser's own `RegExp` in Unicode mode, as JSON Schema
//! validators use it: exact ECMAScript semantics, and no regex engine in the package.

use dpas_host_core::pattern::PatternEngine;
use wasm_bindgen::prelude::*;

#[wasm_bindgen]
extern "C" {
    type RegExp;
    #[wasm_bindgen(constructor, catch)]
    fn new(source: &str, flags: &str) -> Result<RegExp, JsValue>;
    #[wasm_bindgen(method)]
    fn test(this: &RegExp, text: &str) -> bool;
}

/// `new RegExp(source, "u")`, compiled per use (no `g` flag: `test` keeps no state).
pub(crate) struct BrowserPatterns;

impl PatternEngine for BrowserPatterns {
    fn check(&self, source: &str) -> Result<(), String> {
        RegExp::new(source, "u")
            .map(drop)
            .map_err(|_| ["pattern \"", source, "\" is not a valid regular expression"].concat())
    }

    fn is_match(&self, source: &str, text: &str) -> bool {
        RegExp::new(source, "u").is_ok_and(|re| re.test(text))
    }
}
