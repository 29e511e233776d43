//! Safe Rust handles on the tokens, values and groups that compiled code
//! hands to its caller: [`AsyncToken`], [`AsyncValue`] and [`AsyncGroup`].
//!
//! A function compiled from `func.func @f() -> !async.value<i64>` returns a
//! pointer to a runtime object and, with it, one reference that the caller
//! must drop. A handle takes that reference over ([`AsyncToken::from_raw`]
//! and its siblings) and drops it when the handle is dropped. Through the
//! handle, the caller can
//!
//! - ask whether the object is ready or in the error state,
//! - block the calling thread until it completes (`wait`),
//! - read a value's payload as bytes or as a plain-data type, and
//! - `.await` it from any executor: each handle is a [`Future`] whose
//!   waker is registered in the object's own waiter list (no thread is
//!   blocked per future; `future_waiter` explains how a future polled again,
//!   dropped while pending, or racing the completion stays safe).
//!
//! ```
//! use mlir_async_runtime::abi::{mlirAsyncRuntimeCreateValue, mlirAsyncRuntimeEmplaceValue, mlirAsyncRuntimeGetValueStorage};
//! use mlir_async_runtime::AsyncValue;
//!
//! // What compiled code does: a value with 8 bytes of storage, one
//! // reference for the caller and one for the task that produces it.
//! let raw = mlirAsyncRuntimeCreateValue(8);
//! // SAFETY: `raw` is a live value and we own one of its references.
//! let value = unsafe { AsyncValue::from_raw(raw.cast()) };
//! assert!(!value.is_ready());
//!
//! let producer = raw as usize;
//! std::thread::spawn(move || unsafe {
//!     let raw = producer as *mut _;
//!     mlirAsyncRuntimeGetValueStorage(raw).cast::<i64>().write(42);
//!     mlirAsyncRuntimeEmplaceValue(raw); // drops the producer's reference
//! });
//!
//! let available = value.wait().expect("the producer reported no error");
//! assert_eq!(available.read::<i64>(), 42);
//! assert_eq!(available.bytes(), 42i64.to_ne_bytes());
//! ```

use std::ffi::c_void;
use std::fmt;
use std::future::Future;
use std::mem::ManuallyDrop;
use std::pin::Pin;
use std::ptr::NonNull;
use std::task::{Context, Poll};

use crate::api::future_waiter::{poll_completion, Registration};
use crate::instance;
use crate::object::completion::{Completion, Outcome};
use crate::object::group::Group;
use crate::object::header::{self, Header, RuntimeObject};
use crate::object::token::Token;
use crate::object::value::Value;

/// The object a handle awaits completed in the error state: a task set it
/// (`async.runtime.set_error`, or a failed `cf.assert` inside
/// `async.execute`), or, for a group, one of its tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AsyncError {
    kind: &'static str,
}

impl AsyncError {
    /// `"token"`, `"value"` or `"group"`.
    pub fn kind(&self) -> &'static str {
        self.kind
    }
}

impl fmt::Display for AsyncError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the async {} completed in the error state", self.kind)
    }
}

impl std::error::Error for AsyncError {}

/// A token, value or group: something with a completion to await.
trait Awaitable: RuntimeObject {
    fn completion(&self) -> &Completion;
}

impl Awaitable for Token {
    fn completion(&self) -> &Completion {
        Token::completion(self)
    }
}

impl Awaitable for Value {
    fn completion(&self) -> &Completion {
        Value::completion(self)
    }
}

impl Awaitable for Group {
    fn completion(&self) -> &Completion {
        Group::completion(self)
    }
}

/// One reference to an object of kind `T`, and the future's registration
/// on its completion once it has been polled while pending.
struct Handle<T: Awaitable> {
    object: NonNull<T>,
    registration: Option<Registration>,
}

// SAFETY: runtime objects are shared between threads by design (atomic
// reference count and state word); the registration is `Send`.
unsafe impl<T: Awaitable> Send for Handle<T> {}
// SAFETY: `&Handle` only reads the object's atomics.
unsafe impl<T: Awaitable> Sync for Handle<T> {}

impl<T: Awaitable> Handle<T> {
    /// # Safety
    /// `raw` points to a live object of kind `T` on which the caller owns
    /// one reference, which the handle takes over.
    unsafe fn from_raw(raw: *mut c_void, call: &str) -> Handle<T> {
        // SAFETY: per the contract; the kind check aborts with one line on
        // a null, freed or foreign pointer, or on another kind.
        let object = unsafe { header::checked(raw.cast::<T>(), call) };
        Handle { object: NonNull::from(object), registration: None }
    }

    fn get(&self) -> &T {
        // SAFETY: our reference keeps the object alive.
        unsafe { self.object.as_ref() }
    }

    fn state(&self) -> Option<Outcome> {
        self.get().completion().state()
    }

    fn wait(&self) -> Outcome {
        // Through the runtime: under a deterministic schedule the waiting
        // thread is one of its agents (it may hold the turn).
        instance::wait(self.get().completion())
    }

    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<Outcome> {
        // SAFETY: our reference keeps the object alive.
        let completion = unsafe { self.object.as_ref() }.completion();
        poll_completion(completion, &mut self.registration, cx.waker())
    }

    /// Gives the registration up, keeping the reference.
    fn unregister(&mut self) {
        if let Some(registration) = self.registration.take() {
            // SAFETY: our reference keeps the object (and a node in its
            // inline room) alive.
            unsafe { registration.release() };
        }
    }

    fn into_raw(self) -> *mut c_void {
        let mut this = ManuallyDrop::new(self);
        this.unregister();
        this.object.as_ptr().cast()
    }
}

impl<T: Awaitable> Clone for Handle<T> {
    fn clone(&self) -> Handle<T> {
        // SAFETY: a live object starts with its header.
        unsafe { (*self.object.as_ptr().cast::<Header>()).add_ref(1, "clone of an async handle") };
        Handle { object: self.object, registration: None }
    }
}

impl<T: Awaitable> Drop for Handle<T> {
    fn drop(&mut self) {
        // The registration first: its node may live inside the object.
        self.unregister();
        // SAFETY: our reference, dropped once; the object is not touched
        // afterwards.
        unsafe { Header::drop_ref(self.object.as_ptr().cast::<Header>(), 1, "drop of an async handle") };
    }
}

fn result(outcome: Outcome, kind: &'static str) -> Result<(), AsyncError> {
    match outcome {
        Outcome::Available => Ok(()),
        Outcome::Error => Err(AsyncError { kind }),
    }
}

macro_rules! common_methods {
    ($raw_type:literal) => {
        /// The runtime object, for passing to compiled code (which
        /// borrows it: the handle keeps its reference).
        pub fn as_raw(&self) -> *mut c_void {
            self.handle().object.as_ptr().cast()
        }

        #[doc = concat!("True once the ", $raw_type, " has completed, available or in error.")]
        pub fn is_ready(&self) -> bool {
            self.handle().state().is_some()
        }
    };
}

/// `is_error` of a token and a value: the completion's state (a group's
/// may turn true before it completes).
macro_rules! is_error_from_state {
    ($raw_type:literal) => {
        #[doc = concat!("True if the ", $raw_type, " completed in the error state.")]
        pub fn is_error(&self) -> bool {
            self.handle().state() == Some(Outcome::Error)
        }
    };
}

/// What a handle without a payload (a token's, a group's) has: `wait`,
/// `Clone`, a `Future` of `Result<(), AsyncError>`, and `Debug`.
macro_rules! no_payload_handle {
    ($handle:ident, $object:ident, $raw_type:literal) => {
        impl $handle {
            /// Gives the reference back as a raw pointer (for
            /// `mlirAsyncRuntimeDropRef`, or [`from_raw`](Self::from_raw) again).
            pub fn into_raw(self) -> *mut c_void {
                self.handle.into_raw()
            }

            fn handle(&self) -> &Handle<$object> {
                &self.handle
            }

            #[doc = concat!("Blocks the calling thread until the ", $raw_type, " completes. Inside an")]
            #[doc = concat!("async executor, `.await` the ", $raw_type, " instead.")]
            pub fn wait(&self) -> Result<(), AsyncError> {
                result(self.handle.wait(), $raw_type)
            }
        }

        impl Clone for $handle {
            /// Another handle with a reference of its own.
            fn clone(&self) -> $handle {
                $handle { handle: self.handle.clone() }
            }
        }

        impl Future for $handle {
            type Output = Result<(), AsyncError>;

            fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
                self.get_mut().handle.poll(cx).map(|outcome| result(outcome, $raw_type))
            }
        }

        impl fmt::Debug for $handle {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($handle))
                    .field("raw", &self.as_raw())
                    .field("state", &self.handle.state())
                    .finish()
            }
        }
    };
}

/// One reference to an `!async.token`: completes with no payload.
///
/// `.await` it (`Result<(), AsyncError>`), or block on [`wait`](Self::wait).
///
/// ```
/// use mlir_async_runtime::abi::{mlirAsyncRuntimeCreateToken, mlirAsyncRuntimeSetTokenError};
/// use mlir_async_runtime::AsyncToken;
///
/// let raw = mlirAsyncRuntimeCreateToken();
/// // SAFETY: a live token; we own one of its two references.
/// let token = unsafe { AsyncToken::from_raw(raw.cast()) };
/// // SAFETY: the producer's reference, dropped by the call.
/// unsafe { mlirAsyncRuntimeSetTokenError(raw) };
/// assert!(token.is_error());
/// assert_eq!(token.wait().unwrap_err().to_string(), "the async token completed in the error state");
/// ```
pub struct AsyncToken {
    handle: Handle<Token>,
}

impl AsyncToken {
    /// Takes over one reference to a token returned by compiled code.
    ///
    /// # Safety
    /// `raw` points to a live `!async.token` on which the caller owns one
    /// reference, which the handle now owns (and drops when dropped). A
    /// null, freed or foreign pointer, or a value or group, is reported on
    /// stderr and aborts the process, as misuse of the C ABI does.
    pub unsafe fn from_raw(raw: *mut c_void) -> AsyncToken {
        // SAFETY: forwarded contract.
        AsyncToken { handle: unsafe { Handle::from_raw(raw, "AsyncToken::from_raw") } }
    }

    common_methods!("token");
    is_error_from_state!("token");
}

no_payload_handle!(AsyncToken, Token, "token");

/// One reference to an `!async.group`: completes when all of its tokens
/// have; in the error state if any of them is.
pub struct AsyncGroup {
    handle: Handle<Group>,
}

impl AsyncGroup {
    /// Takes over one reference to a group.
    ///
    /// # Safety
    /// As [`AsyncToken::from_raw`], for an `!async.group`.
    pub unsafe fn from_raw(raw: *mut c_void) -> AsyncGroup {
        // SAFETY: forwarded contract.
        AsyncGroup { handle: unsafe { Handle::from_raw(raw, "AsyncGroup::from_raw") } }
    }

    common_methods!("group");

    /// True if any token added to the group so far completed in the error
    /// state (`mlirAsyncRuntimeIsGroupError`: may turn true before the
    /// group completes).
    pub fn is_error(&self) -> bool {
        self.handle().get().is_error()
    }

}

no_payload_handle!(AsyncGroup, Group, "group");

/// One reference to an `!async.value<T>`: completes with a payload.
///
/// `.await` it, or block on [`wait`](Self::wait): both give an
/// [`AvailableValue`] to read the payload from, or the [`AsyncError`].
///
/// ```
/// # use mlir_async_runtime::abi::*;
/// use mlir_async_runtime::AsyncValue;
///
/// let raw = mlirAsyncRuntimeCreateValue(4);
/// // SAFETY: a live value; we own one of its references.
/// let value = unsafe { AsyncValue::from_raw(raw.cast()) };
/// // SAFETY: the producer's side: store, then emplace (drops its reference).
/// unsafe {
///     mlirAsyncRuntimeGetValueStorage(raw).cast::<f32>().write(1.5);
///     mlirAsyncRuntimeEmplaceValue(raw);
/// }
/// // Any executor can await it; here, a minimal one.
/// let available = futures_lite_block_on(value).unwrap();
/// assert_eq!(available.read::<f32>(), 1.5);
/// # fn futures_lite_block_on<F: std::future::Future>(f: F) -> F::Output {
/// #     use std::task::{Context, Poll, Wake, Waker};
/// #     struct Unpark(std::thread::Thread);
/// #     impl Wake for Unpark { fn wake(self: std::sync::Arc<Self>) { self.0.unpark() } }
/// #     let waker = Waker::from(std::sync::Arc::new(Unpark(std::thread::current())));
/// #     let mut f = std::pin::pin!(f);
/// #     loop {
/// #         if let Poll::Ready(v) = f.as_mut().poll(&mut Context::from_waker(&waker)) { return v }
/// #         std::thread::park();
/// #     }
/// # }
/// ```
pub struct AsyncValue {
    /// `None` once its future returned the value.
    handle: Option<Handle<Value>>,
}

impl AsyncValue {
    /// Takes over one reference to a value.
    ///
    /// # Safety
    /// As [`AsyncToken::from_raw`], for an `!async.value`.
    pub unsafe fn from_raw(raw: *mut c_void) -> AsyncValue {
        // SAFETY: forwarded contract.
        AsyncValue { handle: Some(unsafe { Handle::from_raw(raw, "AsyncValue::from_raw") }) }
    }

    /// As [`AsyncToken::into_raw`].
    pub fn into_raw(self) -> *mut c_void {
        let mut this = self;
        this.handle.take().expect(SPENT).into_raw()
    }

    fn handle(&self) -> &Handle<Value> {
        self.handle.as_ref().expect(SPENT)
    }

    common_methods!("value");
    is_error_from_state!("value");

    /// The payload's size in bytes (the size of the value's type).
    pub fn size(&self) -> usize {
        self.handle().get().size()
    }

    /// Blocks the calling thread until the value completes, and gives the
    /// payload to read. Inside an async executor, `.await` the value
    /// instead.
    pub fn wait(self) -> Result<AvailableValue, AsyncError> {
        let mut this = self;
        let mut handle = this.handle.take().expect(SPENT);
        result(handle.wait(), "value")?;
        handle.unregister();
        Ok(AvailableValue { handle })
    }

    /// The payload if the value is available; `None` while it is pending,
    /// the error if it completed in the error state. Never blocks.
    pub fn try_bytes(&self) -> Option<Result<&[u8], AsyncError>> {
        let handle = self.handle();
        let outcome = handle.state()?;
        Some(result(outcome, "value").map(|()| payload(handle)))
    }
}

const SPENT: &str = "AsyncValue used after its future returned the value";

impl Clone for AsyncValue {
    fn clone(&self) -> AsyncValue {
        AsyncValue { handle: Some(self.handle().clone()) }
    }
}

impl Future for AsyncValue {
    /// The value, once available: the handle's reference moves into it.
    type Output = Result<AvailableValue, AsyncError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let handle = this.handle.as_mut().expect("AsyncValue polled after it returned the value");
        match handle.poll(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Outcome::Error) => Poll::Ready(Err(AsyncError { kind: "value" })),
            Poll::Ready(Outcome::Available) => {
                let mut handle = this.handle.take().expect(SPENT);
                handle.unregister();
                Poll::Ready(Ok(AvailableValue { handle }))
            }
        }
    }
}

impl fmt::Debug for AsyncValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.handle {
            Some(handle) => f
                .debug_struct("AsyncValue")
                .field("raw", &handle.object.as_ptr())
                .field("size", &handle.get().size())
                .field("state", &handle.state())
                .finish(),
            None => f.write_str("AsyncValue(spent)"),
        }
    }
}

/// The payload of an available value: its bytes, read in place.
fn payload(handle: &Handle<Value>) -> &[u8] {
    let value = handle.get();
    // SAFETY: the storage holds `size` initialized bytes (zeroed at
    // creation, written by the producer before it emplaced); it is not
    // written after the completion, which our Acquire read of the state
    // ordered before this; our reference keeps it alive for `&self`.
    unsafe { std::slice::from_raw_parts(value.storage(), value.size()) }
}

/// Plain data that a value's payload can be read as: a type for which
/// every bit pattern of its size is a valid value (integers, floats, arrays
/// of them, and `#[repr(C)]` structs of those without padding, such as a
/// memref descriptor).
///
/// # Safety
/// Every `size_of::<Self>()` bytes, whatever their contents, are a valid
/// `Self`: no `bool`, `char`, enum, reference, or padding.
pub unsafe trait Payload: Copy + 'static {}

macro_rules! payloads {
    ($($t:ty),*) => {
        // SAFETY: primitive integers and floats accept any bits.
        $(unsafe impl Payload for $t {})*
    };
}
payloads!(u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize, f32, f64);

// SAFETY: an array of types that accept any bits has no padding and
// accepts any bits.
unsafe impl<T: Payload, const N: usize> Payload for [T; N] {}

/// An `!async.value` that completed with its payload; holds the reference
/// of the [`AsyncValue`] it came from.
pub struct AvailableValue {
    handle: Handle<Value>,
}

impl AvailableValue {
    /// The payload: the bytes of the value's type as the producer stored
    /// them (16-byte aligned).
    pub fn bytes(&self) -> &[u8] {
        payload(&self.handle)
    }

    /// The payload as a `T`: `i64` for `!async.value<i64>`, `f32` for
    /// `!async.value<f32>`, a `#[repr(C)]` struct for a memref descriptor.
    ///
    /// # Panics
    /// If `T`'s size is not the payload's size.
    pub fn read<T: Payload>(&self) -> T {
        let bytes = self.bytes();
        assert_eq!(
            bytes.len(),
            std::mem::size_of::<T>(),
            "the value holds {} bytes; {} has {}",
            bytes.len(),
            std::any::type_name::<T>(),
            std::mem::size_of::<T>()
        );
        // SAFETY: `bytes` holds `size_of::<T>()` initialized bytes, and any
        // bytes are a valid `T` (`Payload`'s contract).
        unsafe { bytes.as_ptr().cast::<T>().read_unaligned() }
    }

    /// The object, for passing to compiled code.
    pub fn as_raw(&self) -> *mut c_void {
        self.handle.object.as_ptr().cast()
    }

    /// As [`AsyncToken::into_raw`].
    pub fn into_raw(self) -> *mut c_void {
        self.handle.into_raw()
    }
}

impl Clone for AvailableValue {
    fn clone(&self) -> AvailableValue {
        AvailableValue { handle: self.handle.clone() }
    }
}

impl fmt::Debug for AvailableValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AvailableValue").field("raw", &self.as_raw()).field("bytes", &self.bytes()).finish()
    }
}
