//! What the engine does against a target that is not a topology of its own: an external admin
//! and gateway ([`external`]), and the routes it makes there ([`route`]).

pub(crate) mod external;
pub(crate) mod route;
