//! Captures a run's standard output at the file-descriptor level: JIT code
//! and the C runner utilities print through C stdio, so fd 1 is pointed at
//! an in-memory file for the run, C stdio is flushed, and fd 1 is restored.

use crate::error::{Error, Result};

pub struct Capture {
    /// memfd that receives the run's output.
    file: libc::c_int,
    /// A duplicate of the real standard output.
    saved: libc::c_int,
}

impl Capture {
    pub fn new() -> Result<Capture> {
        // SAFETY: plain syscalls on descriptors we own.
        unsafe {
            let file = libc::memfd_create(c"jit-harness-stdout".as_ptr(), libc::MFD_CLOEXEC);
            if file < 0 {
                return Err(Error::failed(format!("memfd_create: {}", std::io::Error::last_os_error())));
            }
            let saved = libc::fcntl(1, libc::F_DUPFD_CLOEXEC, 3);
            if saved < 0 {
                return Err(Error::failed(format!("cannot duplicate standard output: {}", std::io::Error::last_os_error())));
            }
            Ok(Capture { file, saved })
        }
    }

    /// The real standard output, valid while the capture lives.
    pub fn saved_stdout(&self) -> libc::c_int {
        self.saved
    }

    /// Points fd 1 at the (empty) capture file.
    pub fn begin(&self) {
        // SAFETY: flushes pending harness output, then swaps fd 1.
        unsafe {
            libc::fflush(std::ptr::null_mut());
            libc::ftruncate(self.file, 0);
            libc::lseek(self.file, 0, libc::SEEK_SET);
            libc::dup2(self.file, 1);
        }
    }

    /// Flushes C stdio, restores fd 1 and appends what the run printed to `out`.
    pub fn end(&self, out: &mut Vec<u8>) {
        out.clear();
        // SAFETY: as above; reads back the bytes written to the memfd.
        unsafe {
            libc::fflush(std::ptr::null_mut());
            libc::dup2(self.saved, 1);
            let len = libc::lseek(self.file, 0, libc::SEEK_CUR);
            if len > 0 {
                out.resize(len as usize, 0);
                let mut done = 0usize;
                while done < out.len() {
                    let n = libc::pread(self.file, out[done..].as_mut_ptr().cast(), out.len() - done, done as libc::off_t);
                    if n <= 0 {
                        break;
                    }
                    done += n as usize;
                }
                out.truncate(done);
            }
        }
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        // SAFETY: we own both descriptors.
        unsafe {
            libc::dup2(self.saved, 1);
            libc::close(self.file);
            libc::close(self.saved);
        }
    }
}

/// Writes all of `bytes` to a raw descriptor (the real stdout while fd 1
/// may be redirected, or from the watchdog).
pub fn write_fd(fd: libc::c_int, bytes: &[u8]) {
    let mut done = 0;
    while done < bytes.len() {
        // SAFETY: writes from a valid slice.
        let n = unsafe { libc::write(fd, bytes[done..].as_ptr().cast(), bytes.len() - done) };
        if n <= 0 {
            break;
        }
        done += n as usize;
    }
}
