//! Everything that turns parsed data into text: escaping, the hex window, values, tables and
//! JSON.

pub mod edit;
pub mod escape;
pub mod hexview;
pub mod json;
pub mod table;
pub mod value;
