//! The three kinds of reference-counted objects, and their header tags
//! (the objects' header, `object/header.rs`, writes and checks them; the
//! probes name them).

/// The three kinds of reference-counted objects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Token,
    Value,
    Group,
}

impl Kind {
    // Tags are unlikely bit patterns, so a wild pointer is caught with high
    // probability instead of being misread as an object.
    pub(crate) const fn tag(self) -> u32 {
        match self {
            Kind::Token => 0x7e4a_0001,
            Kind::Value => 0x7e4a_0002,
            Kind::Group => 0x7e4a_0003,
        }
    }

    #[inline(always)]
    pub(crate) fn from_tag(tag: u32) -> Option<Kind> {
        match tag {
            t if t == Kind::Token.tag() => Some(Kind::Token),
            t if t == Kind::Value.tag() => Some(Kind::Value),
            t if t == Kind::Group.tag() => Some(Kind::Group),
            _ => None,
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::Token => "token",
            Kind::Value => "value",
            Kind::Group => "group",
        }
    }
}
