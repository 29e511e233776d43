//! `!async.group`: completes once all of its `size` tokens have completed.
//!
//! Race freedom (the upstream bug): `AddTokenToGroup`, the token's
//! completion and awaiting the group may run on different threads in any
//! order. Each token is counted exactly once, by whichever side sees it
//! complete: the adder, if the token already completed, or the token's
//! waiter list otherwise (the waiter push and the completion's swap decide
//! atomically which). The count is one atomic decrement; the thread that
//! takes it to zero completes the group's own completion, which fires its
//! awaiters. Nothing here takes a lock.

use std::ptr::{self, NonNull};

use crate::base::kind::Kind;
use crate::object::completion::{take_node, Completion, Outcome, Waiter, WaiterNode};
use crate::object::header::Header;
use crate::object::live;
use crate::object::recycle;
use crate::object::token::Token;
use crate::sync::misuse::abort_misuse;
use crate::sync::{AtomicBool, AtomicI64, Ordering};

#[repr(C)]
pub struct Group {
    header: Header,
    completion: Completion,
    size: i64,
    /// Rank of the next token added.
    next_rank: AtomicI64,
    /// Tokens not yet completed, counting those not yet added.
    pending: AtomicI64,
    /// Tokens that completed in error.
    errors: AtomicI64,
    /// Set by the first `add_token` that leaves a waiter on a pending
    /// token: the group then holds one reference to itself, released by
    /// whoever counts the last token. One reference for all pending tokens,
    /// not one per token: no read-modify-write of the shared count per
    /// task.
    holds_self: AtomicBool,
    /// The waiter that counts a token, shared by every token whose only
    /// waiter it is (`Completion::add_shared_waiter`).
    counter: Waiter,
}

const NOTIFY_CALL: &str = "token completion notifying its group";

/// A token's waiter that counts the token in its group. The group is kept
/// alive by its reference to itself while any token is pending.
#[repr(C)]
struct GroupWaiter {
    waiter: Waiter,
    group: *const Group,
}

// SAFETY: `#[repr(C)]` with its `Waiter` first.
unsafe impl WaiterNode for GroupWaiter {}

impl GroupWaiter {
    /// The waiter's fire function.
    ///
    /// # Safety
    /// `node` is a `GroupWaiter` from `Completion::new_node`, fired once.
    unsafe fn fire(node: *mut Waiter, outcome: Outcome) {
        // SAFETY: per the contract, we own the node now.
        let node = unsafe { take_node(node.cast::<GroupWaiter>()) };
        // SAFETY: this token is still pending in the group, whose reference
        // to itself keeps it alive until its count is taken.
        unsafe { Group::token_completed(node.group, outcome) };
    }
}

/// The group's shared counter's fire function.
///
/// # Safety
/// `node` is a group's `counter`, on the list of one of its pending tokens.
unsafe fn counter_fired(node: *mut Waiter, outcome: Outcome) {
    // SAFETY: `counter` is a field of a `Group`, so its address less its
    // offset is the group's.
    let group = unsafe { node.cast::<u8>().sub(std::mem::offset_of!(Group, counter)).cast::<Group>() };
    // SAFETY: the token is still pending in the group, whose reference to
    // itself keeps it alive until its count is taken.
    unsafe { Group::token_completed(group, outcome) };
}

free_boxed!(Group);
object_basics!(Group, Kind::Group);

impl Group {
    /// A group that will receive exactly `size` tokens, with one reference.
    /// A group of size zero is complete from the start.
    pub(crate) fn create(size: i64, call: &str) -> NonNull<Group> {
        if size < 0 {
            abort_misuse(call, "negative group size");
        }
        live::object_created(Kind::Group);
        let group = recycle::alloc_for::<Group>();
        // Every field is written below: this pattern stops compiling when
        // one is added.
        let _ = |g: &Group| {
            let Group { header: _, completion: _, size: _, next_rank: _, pending: _, errors: _, holds_self: _, counter: _ } =
                g;
        };
        // SAFETY: a fresh block for a group, made in place field by field
        // (`Completion::write_pending`).
        unsafe {
            ptr::addr_of_mut!((*group).header).write(Header::new(Kind::Group, 1, Group::free));
            let completion = ptr::addr_of_mut!((*group).completion);
            if size == 0 {
                Completion::write_completed(completion, Outcome::Available);
            } else {
                Completion::write_pending(completion);
            }
            ptr::addr_of_mut!((*group).size).write(size);
            ptr::addr_of_mut!((*group).next_rank).write(AtomicI64::new(0));
            ptr::addr_of_mut!((*group).pending).write(AtomicI64::new(size));
            ptr::addr_of_mut!((*group).errors).write(AtomicI64::new(0));
            ptr::addr_of_mut!((*group).holds_self).write(AtomicBool::new(false));
            ptr::addr_of_mut!((*group).counter).write(Waiter::new(counter_fired));
        }
        // SAFETY: `alloc_for` never returns null.
        unsafe { NonNull::new_unchecked(group) }
    }

    /// True if any token added so far completed in error.
    pub fn is_error(&self) -> bool {
        // Acquire: pairs with the Release decrement of `pending`, so after
        // an await every error increment is visible.
        self.errors.load(Ordering::Acquire) > 0
    }

    /// Adds `token` and returns its rank (0, 1, 2, … in call order).
    ///
    /// The group stays alive until the token has been counted, even if the
    /// caller drops its reference first: it holds one to itself while any
    /// token is pending.
    pub(crate) fn add_token(&self, token: &Token, call: &str) -> i64 {
        // Relaxed: ranks only need to be unique; the counting below is
        // ordered by `pending`.
        let rank = self.next_rank.fetch_add(1, Ordering::Relaxed);
        if rank >= self.size {
            abort_misuse(
                call,
                &format!("more tokens added to a group than its size {}", self.size),
            );
        }
        let this: *const Group = self;
        if let Some(outcome) = token.completion().state() {
            // SAFETY: the caller holds a reference to the group.
            unsafe { Group::token_completed(this, outcome) };
            return rank;
        }
        // Relaxed: the flag only decides who adds the reference; the last
        // counter reads it after its Acquire decrement of `pending`, which
        // follows (through the token's completion, whose waiter list this
        // add's Release CAS publishes to) every add that set it. Loaded
        // first: once set it stays set, so only the first adds of a group
        // pay the swap, a locked instruction (22 a fine-grained loop of 23
        // blocks before). A load that sees it set comes after a swap that
        // set it, whose thread adds the reference.
        if !self.holds_self.load(Ordering::Relaxed) && !self.holds_self.swap(true, Ordering::Relaxed) {
            self.header.add_ref(1, call);
        }
        // SAFETY: the counter lives as long as the group, which outlives
        // its pending tokens; `counter_fired` neither frees nor writes it.
        match unsafe { token.completion().add_shared_waiter(&self.counter) } {
            Ok(true) => return rank,
            Ok(false) => {}
            Err(outcome) => {
                // SAFETY: we hold the caller's reference.
                unsafe { Group::token_completed(this, outcome) };
                return rank;
            }
        }
        // The token has another waiter: a node of its own.
        let node = token.completion().new_node(GroupWaiter {
            waiter: Waiter::new(GroupWaiter::fire),
            group: this,
        });
        // SAFETY: a fresh heap node whose fire function takes it back.
        if let Err(outcome) = unsafe { token.completion().add_waiter(node.cast()) } {
            // The token completed in between: count it here.
            // SAFETY: not linked, so still ours.
            drop(unsafe { take_node(node) });
            // SAFETY: we hold the caller's reference.
            unsafe { Group::token_completed(this, outcome) };
        }
        rank
    }

    /// Counts one completed token and completes the group after the last,
    /// then releases the group's reference to itself, if it took one. Does
    /// not touch the group after counting a token that is not the last:
    /// the group may be gone by then.
    ///
    /// # Safety
    /// The group is alive: the caller holds a reference, or the token is
    /// pending in it (then the group holds a reference to itself).
    unsafe fn token_completed(this: *const Group, outcome: Outcome) {
        // SAFETY: live, per the contract.
        let group = unsafe { &*this };
        if outcome.is_error() {
            // Relaxed: published by the Release of the decrement below.
            group.errors.fetch_add(1, Ordering::Relaxed);
        }
        // AcqRel: Release publishes our error increment; Acquire lets the
        // last decrementer see every other token's increment.
        let prev = group.pending.fetch_sub(1, Ordering::AcqRel);
        if prev <= 0 {
            abort_misuse(NOTIFY_CALL, "group counted more tokens than its size");
        }
        if prev == 1 {
            let outcome = if group.errors.load(Ordering::Relaxed) > 0 {
                Outcome::Error
            } else {
                Outcome::Available
            };
            if group.completion.complete(outcome).is_err() {
                abort_misuse(NOTIFY_CALL, "group completed twice");
            }
            // Relaxed: see `add_token`; the Acquire decrement above
            // ordered every setter before this load.
            if group.holds_self.load(Ordering::Relaxed) {
                // SAFETY: the group's reference to itself, released once
                // (only the last count gets here); not touched afterwards.
                unsafe { Header::drop_ref(this.cast(), 1, NOTIFY_CALL) };
            }
        }
    }

}

