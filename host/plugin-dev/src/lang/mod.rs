//! One module per language: a project directory in, component bytes out (unstamped).

pub(crate) mod c;
pub(crate) mod js;
pub(crate) mod python;
pub mod rust;

use crate::Error;
use std::path::Path;

fn read_output(path: &Path) -> Result<Vec<u8>, Error> {
    std::fs::read(path).map_err(|e| Error::io(path, e))
}
