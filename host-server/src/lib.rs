//! DPAS host server (library). See the crate README and issue #3.
