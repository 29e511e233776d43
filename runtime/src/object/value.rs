//! `!async.value<T>`: a completion plus a payload of `size` bytes, in the
//! same allocation as its header.

use std::alloc::Layout;
use std::ptr::NonNull;

use crate::base::kind::Kind;
use crate::object::completion::Completion;
use crate::object::header::Header;
use crate::object::live;
use crate::object::recycle;
use crate::sync::misuse::abort_misuse;

/// Alignment of the payload: enough for any scalar, vector or memref
/// descriptor the compiler stores (as C's `max_align_t`).
const PAYLOAD_ALIGN: usize = 16;

#[repr(C)]
pub struct Value {
    header: Header,
    completion: Completion,
    /// Payload size in bytes; the payload follows at `payload_offset()`.
    size: usize,
}

object_basics!(Value, Kind::Value, produced);

/// Where the payload starts: after the value's fields, aligned. The same
/// for every size, so the payload's address needs no layout computation
/// (`Value::layout` checks that it agrees).
const PAYLOAD_OFFSET: usize = std::mem::size_of::<Value>().next_multiple_of(PAYLOAD_ALIGN);

impl Value {
    fn layout(size: usize, call: &str) -> (Layout, usize) {
        let payload = Layout::from_size_align(size, PAYLOAD_ALIGN)
            .unwrap_or_else(|_| abort_misuse(call, "value storage size too large"));
        let (layout, offset) = Layout::new::<Value>()
            .extend(payload)
            .unwrap_or_else(|_| abort_misuse(call, "value storage size too large"));
        debug_assert_eq!(offset, PAYLOAD_OFFSET);
        (layout.pad_to_align(), offset)
    }

    /// A pending value with two references (as a token) and `size` bytes of
    /// zeroed storage.
    pub(crate) fn create(size: i64, call: &str) -> NonNull<Value> {
        let Ok(size) = usize::try_from(size) else {
            abort_misuse(call, "negative value storage size")
        };
        let (layout, offset) = Value::layout(size, call);
        let raw = recycle::alloc(layout);
        let Some(ptr) = NonNull::new(raw.cast::<Value>()) else {
            abort_misuse(call, &format!("cannot allocate {size} bytes of value storage"))
        };
        // SAFETY: the payload lies inside the block, which `layout` pads to
        // `PAYLOAD_ALIGN` (16 bytes, so a payload of 1 to 16 bytes has 16);
        // zeroed as the C++ runtime's storage is. Most payloads are one
        // scalar: one store, not a call to `memset`.
        unsafe {
            let payload = raw.add(offset);
            if size.wrapping_sub(1) < PAYLOAD_ALIGN {
                payload.cast::<[u8; PAYLOAD_ALIGN]>().write([0; PAYLOAD_ALIGN]);
            } else {
                payload.write_bytes(0, size);
            }
        }
        // Every field is written below: this pattern stops compiling when
        // one is added.
        let _ = |v: &Value| {
            let Value { header: _, completion: _, size: _ } = v;
        };
        let value = ptr.as_ptr();
        // SAFETY: freshly allocated, properly aligned for `Value`; made in
        // place field by field (`Completion::write_pending`).
        unsafe {
            std::ptr::addr_of_mut!((*value).header).write(Header::new(Kind::Value, 2, Value::free));
            Completion::write_pending(std::ptr::addr_of_mut!((*value).completion));
            std::ptr::addr_of_mut!((*value).size).write(size);
        }
        live::object_created(Kind::Value);
        ptr
    }

    /// The payload's size in bytes.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The payload's address. The producer writes it before emplacing; the
    /// consumer reads it after awaiting (the completion orders the two).
    pub fn storage(&self) -> *mut u8 {
        // SAFETY: the payload is part of this allocation, at its offset.
        unsafe { (self as *const Value as *mut u8).add(PAYLOAD_OFFSET) }
    }

    /// The header's free function.
    ///
    /// # Safety
    /// `this` is a value with no reference left, freed once.
    unsafe fn free(this: *mut Header, call: &str) {
        let this = this.cast::<Value>();
        // SAFETY: we own the value; it was allocated by `create`.
        let value = unsafe { &*this };
        value.completion.check_no_waiters(call, "value");
        let (layout, _) = Value::layout(value.size, call);
        // SAFETY: drop the header fields in place, then release the block
        // with the layout it was allocated with.
        unsafe {
            std::ptr::drop_in_place(this);
            recycle::free(this.cast(), layout);
        }
        live::object_freed(Kind::Value);
    }
}
