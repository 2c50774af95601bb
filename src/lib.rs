//! placeholder
#![allow(missing_docs)]
pub mod proto {
    pub mod tensorflow {
        include!(concat!(env!("OUT_DIR"), "/tensorflow.rs"));
    }
    pub mod oneflow {
        include!(concat!(env!("OUT_DIR"), "/oneflow.rs"));
    }
}
