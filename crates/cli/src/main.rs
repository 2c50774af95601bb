//! `ofconvert`: the command line of [`ofconvert_cli`], which the Python package's
//! `ofconvert` command runs too.

fn main() {
    std::process::exit(ofconvert_cli::run(std::env::args_os()))
}
