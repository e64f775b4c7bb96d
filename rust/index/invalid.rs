//! Why bytes are not a usable index: what `format` and `lines` refuse, as data.

/// Why bytes are not a usable index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Invalid(pub String);

impl Invalid {
    pub fn new(why: impl Into<String>) -> Self {
        Invalid(why.into())
    }
}
