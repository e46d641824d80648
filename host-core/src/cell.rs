//! `RefCell` access through one place in the source.
//!
//! `RefCell::borrow`/`borrow_mut` are `#[track_caller]`: every call site gets its own panic
//! `Location` (16 bytes of data and a file name) for the "already borrowed" panic, which the
//! core's single-threaded code never reaches. Called through these methods, the locations are
//! the two below, whatever the call site, and the checks are two functions per cell type instead
//! of a branch and a panic call at every site, which is smaller in the browser build.

use std::cell::{Ref, RefCell, RefMut};

pub trait Access<T> {
    /// `borrow()`, with this line as its panic location.
    fn get_ref(&self) -> Ref<'_, T>;
    /// `borrow_mut()`, with this line as its panic location.
    fn get_mut_ref(&self) -> RefMut<'_, T>;
}

impl<T> Access<T> for RefCell<T> {
    #[inline(never)]
    fn get_ref(&self) -> Ref<'_, T> {
        self.borrow()
    }

    #[inline(never)]
    fn get_mut_ref(&self) -> RefMut<'_, T> {
        self.borrow_mut()
    }
}
