//! What several commands' arguments share: the client's flags (`client`), what the code under
//! test is (`commit`), the live view's flags (`live`), how a comparison decides (`gate`), the
//! typed values of flags (`values`) and vegeta's single-dash spelling (`vegeta`). A command's own
//! arguments live in its folder, beside its run.

pub mod client;
pub mod commit;
pub mod gate;
pub mod live;
pub mod values;
pub mod vegeta;
