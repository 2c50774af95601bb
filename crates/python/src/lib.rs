//! `ofconvert._native`, the extension module under the `ofconvert` Python package: the
//! command line (the same library the `ofconvert` binary is made of), the conversion
//! engine, a reader for records of both formats and writers for them. The Python package
//! (`python/ofconvert/`) wraps it with keyword arguments and batching; this module does the
//! work with the GIL released where it can.

use pyo3::prelude::*;

mod columns;
mod convert;
mod dataset;
mod decode;
mod errors;
mod inspect;
mod keywords;
mod read;
mod shapes;
mod values;
mod watch;
mod write;

/// Runs the `ofconvert` command line with `args` (the program's name first) and returns its
/// exit status, with the GIL released: the binary's very program, output, progress and
/// signal handling included.
#[pyfunction]
fn main(py: Python<'_>, args: Vec<std::ffi::OsString>) -> i32 {
    py.detach(|| ofconvert_cli::run(args))
}

/// Every subcommand of the command line with the long names of its flags (globals
/// included), for a test that each has its keyword argument in Python.
#[pyfunction]
fn cli_flags() -> Vec<(String, Vec<String>)> {
    ofconvert_cli::flags()
}

#[pymodule]
fn _native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(main, module)?)?;
    module.add_function(wrap_pyfunction!(convert::convert, module)?)?;
    module.add_function(wrap_pyfunction!(convert::commit, module)?)?;
    module.add_function(wrap_pyfunction!(inspect::count, module)?)?;
    module.add_function(wrap_pyfunction!(inspect::verify, module)?)?;
    module.add_function(wrap_pyfunction!(inspect::schema, module)?)?;
    module.add_function(wrap_pyfunction!(inspect::index, module)?)?;
    module.add_function(wrap_pyfunction!(inspect::diff, module)?)?;
    module.add_function(wrap_pyfunction!(cli_flags, module)?)?;
    module.add_class::<read::Reader>()?;
    module.add_class::<write::Writer>()?;
    module.add_class::<dataset::Records>()?;
    module.add_class::<dataset::Stream>()?;
    module.add_class::<dataset::Mixture>()?;
    module.add_class::<dataset::MixedLane>()?;
    module.add_function(wrap_pyfunction!(dataset::shares, module)?)?;
    Ok(())
}
