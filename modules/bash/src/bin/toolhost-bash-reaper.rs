//! The reaper program the bash module starts for every command; see
//! `toolhost_bash::process::program`. Not meant to be run by hand.

fn main() {
    toolhost_bash::process::program::run()
}
