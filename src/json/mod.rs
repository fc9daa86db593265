//! Borrowed views into JSON text, and objects written back from their members.
//!
//! Admission requests are large (a Node with its image list is tens of kilobytes) and the policies
//! read a handful of fields. Parsing borrows: every value we do not read stays an untouched
//! `&RawValue` slice of the request, and a mutation splices the request's text around its edit
//! ([`Object::write_in`]). Nothing else is re-serialised, so key order,
//! formatting and fields that no Kubernetes version we know of has all survive a mutation.

mod array;
pub mod error;
pub(crate) mod flat;
mod object;
pub(crate) mod scan;
mod text;
mod walk;

pub use array::{append_items, items};
pub use flat::last_strings;
pub use object::{fields_in, get_in, Level, MemberReader, Object, Reached};
pub use scan::unpaired_surrogates_replaced;
pub use text::{any_item_field, field, member_at, members, write_str, JsonStr, Raw};
pub use walk::{nested_past, MAX_NESTING};

use std::ops::Range;

/// The byte range `inner` occupies inside `outer`.
///
/// Both must be slices of one buffer: every `&RawValue` produced by `serde_json::from_str` on a
/// `&str` borrows from that string, which is how all views in this crate are made.
pub fn span_in(outer: &str, inner: &str) -> Range<usize> {
    let start = inner.as_ptr() as usize - outer.as_ptr() as usize;
    debug_assert!(
        start + inner.len() <= outer.len(),
        "span outside of its document"
    );
    start..start + inner.len()
}
