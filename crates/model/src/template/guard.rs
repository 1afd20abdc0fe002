//! The state of the render running on this thread: its clock, its deadline, its output cap,
//! and the typed cause of a failure raised inside a callback (minijinja's own error type
//! carries only a kind and a message, so the cause travels beside it).
//!
//! A thread-local because minijinja's callbacks (the formatter, functions, filters) are set
//! once per environment, while the deadline and the clock belong to one render.

use std::cell::RefCell;
use std::io;
use std::time::{Duration, Instant};

use minijinja::{Error, ErrorKind};

use super::clock::Moment;
use super::error::TemplateError;

/// One render's bounds and inputs the callbacks read.
#[derive(Debug)]
pub(crate) struct Guard {
    pub(crate) now: Moment,
    deadline: Instant,
    time: Duration,
    pub(crate) strict: bool,
    cause: Option<TemplateError>,
}

thread_local! {
    static GUARD: RefCell<Vec<Guard>> = const { RefCell::new(Vec::new()) };
}

/// Installs a guard for the render that runs inside `f` (renders nest: a guard stack), and
/// returns `f`'s result with the cause a callback recorded, if any.
pub(crate) fn with_guard<T>(
    now: Moment,
    time: Duration,
    strict: bool,
    f: impl FnOnce() -> T,
) -> (T, Option<TemplateError>) {
    let deadline = Instant::now().checked_add(time).unwrap_or_else(Instant::now);
    GUARD.with(|g| g.borrow_mut().push(Guard { now, deadline, time, strict, cause: None }));
    let result = f();
    let guard = GUARD.with(|g| g.borrow_mut().pop());
    (result, guard.and_then(|g| g.cause))
}

/// Reads the current guard (a default one outside any render).
pub(crate) fn read<T>(f: impl FnOnce(Option<&Guard>) -> T) -> T {
    GUARD.with(|g| f(g.borrow().last()))
}

/// Records `cause` as the reason of the error the caller is about to return, and builds that
/// error (its kind matters only to minijinja).
pub(crate) fn fail(cause: TemplateError) -> Error {
    let message = cause.to_string();
    GUARD.with(|g| {
        if let Some(guard) = g.borrow_mut().last_mut() {
            guard.cause.get_or_insert(cause);
        }
    });
    Error::new(ErrorKind::InvalidOperation, message)
}

/// Fails the render once its deadline has passed.
pub(crate) fn check_time() -> Result<(), Error> {
    let late = read(|g| g.and_then(|g| (Instant::now() > g.deadline).then_some(g.time)));
    match late {
        Some(limit) => Err(fail(TemplateError::Timeout { limit })),
        None => Ok(()),
    }
}

/// The render's output: a byte buffer that refuses to grow past its cap, and checks the
/// deadline at every write (a loop that prints is stopped by the clock as well as the fuel).
#[derive(Debug)]
pub(crate) struct CappedOutput {
    pub(crate) bytes: Vec<u8>,
    cap: usize,
}

impl CappedOutput {
    pub(crate) fn new(cap: usize) -> CappedOutput {
        CappedOutput { bytes: Vec::new(), cap }
    }
}

impl io::Write for CappedOutput {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.bytes.len().saturating_add(buf.len()) > self.cap {
            fail(TemplateError::OutputTooLarge { limit: self.cap });
            return Err(io::Error::other("output limit"));
        }
        if check_time().is_err() {
            return Err(io::Error::other("time limit"));
        }
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
