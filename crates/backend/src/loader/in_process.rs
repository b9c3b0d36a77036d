//! The in-process source's backend: a library loaded into the host, called
//! through the FFI object it registered. The only backend that speaks the
//! module ABI.

use abi_stable::sabi_trait::TD_Opaque;
use abi_stable::sabi_types::RRef;
use abi_stable::std_types::RStr;
use toolhost_core::abi::{FfiCleanupBox, FfiContext_TO, FfiToolBox};

use crate::context::CallContext;
use crate::tool::ToolBackend;

/// A tool of a library loaded into the host.
pub struct InProcess(pub FfiToolBox);

impl ToolBackend for InProcess {
    fn call(&self, call_json: &str, ctx: &CallContext) -> String {
        let ffi = FfiContext_TO::from_ptr(RRef::new(ctx), TD_Opaque);
        self.0.execute(RStr::from_str(call_json), ffi).into_string()
    }
}

/// A library's cleanup, as what unmounting its module owes.
pub fn cleanup(mut cleanup: FfiCleanupBox) -> super::Cleanup {
    Box::new(move || cleanup.cleanup())
}
