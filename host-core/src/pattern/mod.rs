//! JSON Schema `pattern`: an ECMAScript regular expression, matched unanchored, behind
//! [`PatternEngine`] so the core stays free of any platform.
//!
//! In the browser the engine is the browser's own `RegExp` (Unicode mode, as JSON Schema
//! validators use it), supplied by the binding crate: exact ECMAScript semantics, and no regex
//! engine in the package. Natively (the core's tests, any non-wasm host) it is
//! [`NativePatterns`], a small backtracking matcher for the subset the demo and the tests use;
//! it refuses what it does not implement at compile time.

mod native;

pub use native::Pattern;

/// Compiles and matches JSON Schema `pattern`s.
pub trait PatternEngine {
    /// Refuses a pattern the engine cannot compile, saying why.
    fn check(&self, source: &str) -> Result<(), String>;
    /// Whether `source` matches anywhere in `text`; a pattern that does not compile never does.
    fn is_match(&self, source: &str, text: &str) -> bool;
}

/// The native engine: [`Pattern`].
#[derive(Debug, Clone, Copy, Default)]
pub struct NativePatterns;

impl PatternEngine for NativePatterns {
    fn check(&self, source: &str) -> Result<(), String> {
        Pattern::compile(source).map(drop)
    }

    fn is_match(&self, source: &str, text: &str) -> bool {
        Pattern::compile(source).is_ok_and(|p| p.is_match(text))
    }
}
