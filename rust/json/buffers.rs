//! The vectors a thread's parses reuse: the container stack and the member lists
//! of [`Parsed`], taken before a parse and handed back after it, so a line costs
//! no allocation once the first few have run.

use std::cell::RefCell;

use super::shapes::{Member, Parsed};

#[derive(Default)]
pub(super) struct Scratch {
    /// Open containers, innermost last: `b'['` or `b'{'`.
    pub stack: Vec<u8>,
    pub members: Vec<Member>,
    pub inner: Vec<(usize, Member)>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::default();
}

/// This thread's vectors (fresh ones when they are out already: a parse inside a
/// parse, which the sinks never start, would still be correct).
pub(super) fn take() -> Scratch {
    SCRATCH
        .with(|s| s.try_borrow_mut().map(|mut s| std::mem::take(&mut *s)).ok())
        .unwrap_or_default()
}

/// Hand the stack back after a parse; the member lists went out in its [`Parsed`].
pub(super) fn give_back_stack(mut stack: Vec<u8>) {
    stack.clear();
    SCRATCH.with(|s| {
        if let Ok(mut s) = s.try_borrow_mut() {
            s.stack = stack;
        }
    });
}

/// Hand a parse's vectors back for the next parse on this thread.
pub fn recycle(parsed: Parsed) {
    let Parsed {
        mut members,
        mut inner,
        ..
    } = parsed;
    members.clear();
    inner.clear();
    SCRATCH.with(|s| {
        if let Ok(mut s) = s.try_borrow_mut() {
            s.members = members;
            s.inner = inner;
        }
    });
}
