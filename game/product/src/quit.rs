//! Ctrl-C (and SIGTERM) as a request to quit: every mode checks [`requested`] in its loop and leaves the way it
//! would on its own (a window closed, `--seconds` reached), so the goodbye to the other players goes out. A second
//! Ctrl-C, for a loop that does not come back, ends the process at once.

use std::sync::atomic::{AtomicBool, Ordering};

static REQUESTED: AtomicBool = AtomicBool::new(false);

/// Exit code of a second Ctrl-C (128 + SIGINT, as a shell reports it).
const FORCED_EXIT_CODE: i32 = 130;

/// Installs the handler (once per process; a second call, or a handler another library installed, is logged).
pub fn install() {
    let installed = ctrlc::set_handler(|| {
        if REQUESTED.swap(true, Ordering::SeqCst) {
            std::process::exit(FORCED_EXIT_CODE);
        }
        eprintln!("tumble: quitting (Ctrl-C again to stop at once)");
    });
    if let Err(e) = installed {
        tracing::debug!("no Ctrl-C handler: {e}");
    }
}

/// Whether Ctrl-C (or SIGTERM) asked this process to quit.
pub fn requested() -> bool {
    REQUESTED.load(Ordering::SeqCst)
}

/// Asks to quit, as Ctrl-C does (tests, and a mode that ends itself).
pub fn request() {
    REQUESTED.store(true, Ordering::SeqCst);
}
