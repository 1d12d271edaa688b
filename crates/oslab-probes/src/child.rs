//! Children that are always cleaned up: forked peers (killed and reaped on drop, and killed by the
//! kernel if we die first), shared memory that survives fork, and the static do-nothing helper
//! program used by the spawn and exec probes.

use crate::probe::ProbeError;
use oslab_files::private::PrivateDir;
use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU32;

/// A forked child process, killed (if still running) and reaped when dropped.
#[derive(Debug)]
pub struct Child {
    pid: libc::pid_t,
    reaped: bool,
}

impl Child {
    /// Forks; the child runs `f` and then `_exit(0)`s. `f` must only use async-signal-safe calls
    /// (raw syscalls, atomics): the parent may have other threads.
    pub fn fork(f: impl FnOnce()) -> Result<Child, ProbeError> {
        // SAFETY: the child only runs `f`, which the contract restricts to async-signal-safe work,
        // and then _exit.
        let pid = unsafe { libc::fork() };
        match pid {
            -1 => Err(ProbeError::os("fork")),
            0 => {
                // SAFETY: prctl/getppid/_exit are async-signal-safe. Die with the parent.
                unsafe {
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                }
                f();
                // SAFETY: as above.
                unsafe { libc::_exit(0) }
            }
            pid => Ok(Child { pid, reaped: false }),
        }
    }

    /// The child's pid.
    pub fn pid(&self) -> libc::pid_t {
        self.pid
    }

    /// Waits for the child to exit; returns its wait status.
    pub fn wait(mut self) -> Result<i32, ProbeError> {
        let status = wait_pid(self.pid)?;
        self.reaped = true;
        Ok(status)
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if !self.reaped {
            // SAFETY: pid is our unreaped child, so it cannot have been recycled.
            unsafe { libc::kill(self.pid, libc::SIGKILL) };
            let _ = wait_pid(self.pid);
        }
    }
}

/// waitpid, retrying on EINTR.
pub fn wait_pid(pid: libc::pid_t) -> Result<i32, ProbeError> {
    let mut status = 0;
    loop {
        // SAFETY: status is a valid out-pointer.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        if r == pid {
            return Ok(status);
        }
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return Err(ProbeError::os("waitpid"));
        }
    }
}

/// Memory (a page or more) shared between a process and the children it forks afterwards.
pub struct SharedPage {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the page is only accessed through atomics.
unsafe impl Send for SharedPage {}
// SAFETY: as above.
unsafe impl Sync for SharedPage {}

impl SharedPage {
    /// Maps one zeroed shared anonymous page.
    pub fn new() -> Result<SharedPage, ProbeError> {
        SharedPage::with_len(4096)
    }

    /// Maps `len` zeroed shared bytes (rounded up to a page).
    pub fn with_len(len: usize) -> Result<SharedPage, ProbeError> {
        let len = len.max(1).next_multiple_of(4096);
        // SAFETY: anonymous shared mapping with no address hint.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(ProbeError::os("mmap shared page"));
        }
        Ok(SharedPage {
            ptr: ptr as *mut u8,
            len,
        })
    }

    /// The `i`-th 32-bit word, as an atomic.
    pub fn word(&self, i: usize) -> &AtomicU32 {
        assert!(i < self.len / 4);
        // SAFETY: in bounds, 4-byte aligned (page-aligned base), lives as long as &self.
        unsafe { &*(self.ptr.add(i * 4) as *const AtomicU32) }
    }

    /// The `i`-th 64-bit word, as an atomic.
    pub fn word64(&self, i: usize) -> &std::sync::atomic::AtomicU64 {
        assert!(i < self.len / 8);
        // SAFETY: in bounds, 8-byte aligned, lives as long as &self.
        unsafe { &*(self.ptr.add(i * 8) as *const std::sync::atomic::AtomicU64) }
    }
}

impl Drop for SharedPage {
    fn drop(&mut self) {
        // SAFETY: ptr/len came from our mmap.
        unsafe { libc::munmap(self.ptr as *mut libc::c_void, self.len) };
    }
}

/// A statically linked program that only calls exit(0): the smallest thing `exec` can start. It is
/// a 129-byte ELF written at run time, so the build needs no C toolchain.
pub struct NopProgram {
    /// Removed with the program when dropped.
    _dir: PrivateDir,
    path: PathBuf,
    /// NUL-terminated path, for exec.
    pub cpath: CString,
}

impl NopProgram {
    /// Writes the program into a fresh temporary directory.
    pub fn create() -> Result<NopProgram, ProbeError> {
        let code = exit0_code().ok_or_else(|| {
            ProbeError::Unsupported("no built-in do-nothing program for this architecture".into())
        })?;
        // Run as root, the program must be one no other user can have made or can swap.
        let dir = PrivateDir::new("oslab-nop").map_err(|e| {
            ProbeError::Failed(format!("a directory for the do-nothing program: {e}"))
        })?;
        // Written through the directory's descriptor; run by its resolved path, which no one
        // else can change (posix_spawn takes a path, and both exec probes price its lookup).
        let path = dir.path().join("nop");
        write_executable(&dir, &elf_image(code.0, code.1))
            .map_err(|e| ProbeError::Failed(format!("writing {}: {e}", path.display())))?;
        let cpath = CString::new(path.as_os_str().as_encoded_bytes())
            .map_err(|_| ProbeError::Failed("temp path contains NUL".into()))?;
        let prog = NopProgram {
            _dir: dir,
            path,
            cpath,
        };
        // A noexec /tmp makes exec fail: find out now and say so.
        let status = std::process::Command::new(&prog.path)
            .status()
            .map_err(|e| {
                ProbeError::Unsupported(format!(
                    "cannot execute {} ({e}); is the temp dir mounted noexec? set TMPDIR",
                    prog.path.display()
                ))
            })?;
        if !status.success() {
            return Err(ProbeError::Failed(format!(
                "{} exited with {status}",
                prog.path.display()
            )));
        }
        Ok(prog)
    }

    /// Path of the program.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

fn write_executable(dir: &PrivateDir, bytes: &[u8]) -> std::io::Result<()> {
    let mut f = dir.create_file("nop", 0o755)?;
    std::io::Write::write_all(&mut f, bytes)?;
    f.sync_all()
}

/// Machine code for `exit(0)` and the ELF machine number.
fn exit0_code() -> Option<(u16, &'static [u8])> {
    if cfg!(target_arch = "x86_64") {
        // mov eax, 60 (exit); xor edi, edi; syscall
        Some((62, &[0xb8, 0x3c, 0, 0, 0, 0x31, 0xff, 0x0f, 0x05]))
    } else if cfg!(target_arch = "aarch64") {
        // mov x8, #93 (exit); mov x0, #0; svc #0
        Some((
            183,
            &[
                0xa8, 0x0b, 0x80, 0xd2, 0x00, 0x00, 0x80, 0xd2, 0x01, 0x00, 0x00, 0xd4,
            ],
        ))
    } else {
        None
    }
}

/// A minimal 64-bit little-endian ELF executable: header, one PT_LOAD segment, the code.
fn elf_image(machine: u16, code: &[u8]) -> Vec<u8> {
    const BASE: u64 = 0x40_0000;
    const EHDR: u64 = 64;
    const PHDR: u64 = 56;
    let entry = BASE + EHDR + PHDR;
    let total = EHDR + PHDR + code.len() as u64;
    let mut b = Vec::with_capacity(total as usize);
    b.extend_from_slice(&[0x7f, b'E', b'L', b'F', 2, 1, 1, 0]); // 64-bit, LE, version 1, SysV
    b.extend_from_slice(&[0; 8]);
    b.extend_from_slice(&2u16.to_le_bytes()); // ET_EXEC
    b.extend_from_slice(&machine.to_le_bytes());
    b.extend_from_slice(&1u32.to_le_bytes()); // EV_CURRENT
    b.extend_from_slice(&entry.to_le_bytes());
    b.extend_from_slice(&EHDR.to_le_bytes()); // program headers right after the header
    b.extend_from_slice(&0u64.to_le_bytes()); // no section headers
    b.extend_from_slice(&0u32.to_le_bytes()); // flags
    b.extend_from_slice(&(EHDR as u16).to_le_bytes());
    b.extend_from_slice(&(PHDR as u16).to_le_bytes());
    b.extend_from_slice(&1u16.to_le_bytes()); // one program header
    b.extend_from_slice(&[0; 6]); // shentsize, shnum, shstrndx
    b.extend_from_slice(&1u32.to_le_bytes()); // PT_LOAD
    b.extend_from_slice(&5u32.to_le_bytes()); // R + X
    b.extend_from_slice(&0u64.to_le_bytes()); // offset
    b.extend_from_slice(&BASE.to_le_bytes()); // vaddr
    b.extend_from_slice(&BASE.to_le_bytes()); // paddr
    b.extend_from_slice(&total.to_le_bytes()); // filesz
    b.extend_from_slice(&total.to_le_bytes()); // memsz
    b.extend_from_slice(&0x1000u64.to_le_bytes()); // align
    b.extend_from_slice(code);
    b
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    #[test]
    fn nop_program_runs_and_is_cleaned_up() {
        let prog = NopProgram::create().unwrap();
        let path = prog.path().to_path_buf();
        let out = std::process::Command::new(&path).output().unwrap();
        assert!(out.status.success() && out.stdout.is_empty());
        drop(prog);
        assert!(!path.exists());
    }

    #[test]
    fn child_sees_shared_page_and_is_reaped() {
        let page = SharedPage::new().unwrap();
        let child = Child::fork(|| page.word(3).store(42, Ordering::SeqCst)).unwrap();
        let status = child.wait().unwrap();
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
        assert_eq!(page.word(3).load(Ordering::SeqCst), 42);
    }

    #[test]
    fn dropped_child_is_killed_and_reaped() {
        let child = Child::fork(|| loop {
            // SAFETY: pause is async-signal-safe.
            unsafe { libc::pause() };
        })
        .unwrap();
        let pid = child.pid();
        drop(child);
        // SAFETY: probing a pid with signal 0.
        let alive = unsafe { libc::kill(pid, 0) } == 0;
        assert!(!alive, "child {pid} still exists after drop");
    }
}
