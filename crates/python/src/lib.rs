//! `ofconvert._native`, the extension module under the `ofconvert` Python package: the
//! conversion engine, a reader for records of both formats and writers for them. The
//! Python package (`python/ofconvert/`) wraps it with keyword arguments, batching and the
//! command line; this module does the work with the GIL released where it can.

use pyo3::prelude::*;

mod convert;
mod errors;
mod read;
mod values;
mod write;

#[pymodule]
fn _native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(convert::convert, module)?)?;
    module.add_class::<read::Reader>()?;
    module.add_class::<write::Writer>()?;
    Ok(())
}
