//! The stack a program's work runs on, whatever `ulimit -s` says: a small limit (64 KiB)
//! overflowed the main thread, and the program aborted.

/// Runs `f` on the calling thread when its stack limit allows `bytes`, else on a thread of its
/// own with a stack of `bytes` (a second thread only then: it would change what a child forked
/// from this process copies). Err when that thread cannot be started.
pub fn with_stack<T: Send>(bytes: usize, f: impl FnOnce() -> T + Send) -> std::io::Result<T> {
    // SAFETY: getrlimit fills the struct we pass.
    let mut limit: libc::rlimit = unsafe { std::mem::zeroed() };
    // SAFETY: a valid resource and out-pointer.
    let small = unsafe { libc::getrlimit(libc::RLIMIT_STACK, &mut limit) } == 0
        && limit.rlim_cur != libc::RLIM_INFINITY
        && (limit.rlim_cur as usize) < bytes;
    if !small {
        return Ok(f());
    }
    std::thread::scope(|s| {
        let worker = std::thread::Builder::new()
            .name("main".into())
            .stack_size(bytes)
            .spawn_scoped(s, f)?;
        // A panic was said where it happened; it ends the program as it would have.
        Ok(worker
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p)))
    })
}
