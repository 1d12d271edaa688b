//! What programs pay to talk to each other: a small message's round trip over a pipe, an
//! AF_UNIX stream socket, TCP and UDP on loopback, with the peer on the same cpu and on another
//! (as the switch probes place their tasks); bandwidth by message size (64 B to 1 MiB) over the
//! streams; and a TCP connection set up and torn down.
//!
//! The peer is a thread of this process pinned to its cpu (lmbench's lat_pipe and lat_tcp use a
//! second process; a thread pays the same kernel path without the address-space switch, and the
//! switch probes measure that difference). Round trip: write the message, read the echo. Bandwidth:
//! a count, then that many bytes in messages of one size, then a one-byte acknowledgement, per
//! message; the peer reads as it comes (bw_pipe, bw_tcp). Connect: socket, connect, accept and
//! both closed, the client's with SO_LINGER 0 so no TIME_WAIT piles up (lat_connect leaves them).

use crate::probe::{Context, Probe, ProbeError};
use oslab_core::catalog::{self, metric, Entry};
use oslab_core::model::{judged, Judge, Measurement, Status, Unit};
use oslab_core::{params, CpuSet};
use oslab_os::affinity::set_affinity;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// The message a round trip sends, in bytes (lmbench's lat_pipe and lat_tcp send one word).
pub const SMALL: usize = 1;

/// Message sizes the bandwidth is measured at.
pub const SIZES: [usize; 4] = [64, 4 << 10, 64 << 10, 1 << 20];

/// The IPC probes.
pub const PROBES: &[Probe] = &[
    Probe {
        entry: &catalog::IPC_PIPE,
        needs: &[],
        cost: 3.0,
        plan: None,
        run: |cx, me| transport(cx, me, Transport::Pipe),
    },
    Probe {
        entry: &catalog::IPC_UNIX,
        needs: &[],
        cost: 3.0,
        plan: None,
        run: |cx, me| transport(cx, me, Transport::Unix),
    },
    Probe {
        entry: &catalog::IPC_TCP,
        needs: &[],
        cost: 3.0,
        plan: None,
        run: |cx, me| transport(cx, me, Transport::Tcp),
    },
    Probe {
        entry: &catalog::IPC_UDP,
        needs: &[],
        cost: 2.0,
        plan: None,
        run: |cx, me| transport(cx, me, Transport::Udp),
    },
    Probe {
        entry: &catalog::IPC_TCP_CONNECT,
        needs: &[],
        cost: 1.0,
        plan: None,
        run: connect,
    },
];

/// How two ends are joined.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Transport {
    Pipe,
    Unix,
    Tcp,
    Udp,
}

impl Transport {
    fn name(self) -> &'static str {
        match self {
            Transport::Pipe => "pipe",
            Transport::Unix => "unix stream socket",
            Transport::Tcp => "TCP on loopback",
            Transport::Udp => "UDP on loopback",
        }
    }

    /// Whether bytes arrive as a stream (a read may return part of a write).
    fn stream(self) -> bool {
        self != Transport::Udp
    }
}

/// One end: where it reads and where it writes (one socket, or two pipes' ends).
struct End {
    read: OwnedFd,
    write: Option<OwnedFd>,
}

impl End {
    fn rfd(&self) -> RawFd {
        self.read.as_raw_fd()
    }

    fn wfd(&self) -> RawFd {
        self.write.as_ref().unwrap_or(&self.read).as_raw_fd()
    }
}

fn owned(fd: RawFd, what: &str) -> Result<OwnedFd, ProbeError> {
    if fd < 0 {
        return Err(ProbeError::os(what));
    }
    // SAFETY: a descriptor just returned to us, owned from here on.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Why loopback cannot be used, as a skip: no IPv4, or `lo` down (a network namespace).
fn no_loopback(what: &str) -> ProbeError {
    let e = std::io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::ENETUNREACH | libc::EADDRNOTAVAIL | libc::EAFNOSUPPORT | libc::ECONNREFUSED) => {
            ProbeError::Unsupported(format!(
                "no loopback network here ({what}: {e}): is `lo` up in this network namespace?"
            ))
        }
        _ => ProbeError::Failed(format!("{what}: {e}")),
    }
}

/// Why a connect to a bound loopback socket failed: the address is there (the bind worked), so
/// "address not available" is the local port range used up, not `lo` down.
fn no_port(what: &str) -> ProbeError {
    let e = std::io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EADDRNOTAVAIL) => {
            let range = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
                .map(|r| r.split_whitespace().collect::<Vec<_>>().join("-"))
                .unwrap_or_else(|_| "unknown".into());
            ProbeError::Unsupported(format!(
                "no free local port for a loopback connection ({what}: {e}): the ephemeral range net.ipv4.ip_local_port_range = {range} is in use (connections in TIME_WAIT hold theirs for a minute): widen it, or run again later"
            ))
        }
        _ => no_loopback(what),
    }
}

/// 127.0.0.1, port `port` (network order).
fn loopback(port: u16) -> libc::sockaddr_in {
    // SAFETY: plain data, zero is a valid start.
    let mut a: libc::sockaddr_in = unsafe { std::mem::zeroed() };
    a.sin_family = libc::AF_INET as libc::sa_family_t;
    a.sin_port = port;
    a.sin_addr.s_addr = u32::from_ne_bytes([127, 0, 0, 1]);
    a
}

const ADDR_LEN: libc::socklen_t = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;

/// An IPv4 socket of `kind` bound to 127.0.0.1 on a port the kernel picks; and that port.
fn bound(kind: libc::c_int) -> Result<(OwnedFd, libc::sockaddr_in), ProbeError> {
    // SAFETY: plain syscalls on our own descriptors and buffers.
    unsafe {
        let fd = owned(
            libc::socket(libc::AF_INET, kind | libc::SOCK_CLOEXEC, 0),
            "socket",
        )
        .map_err(|_| no_loopback("socket"))?;
        let addr = loopback(0);
        if libc::bind(
            fd.as_raw_fd(),
            (&addr as *const libc::sockaddr_in).cast(),
            ADDR_LEN,
        ) != 0
        {
            return Err(no_loopback("bind to 127.0.0.1"));
        }
        let mut got = loopback(0);
        let mut len = ADDR_LEN;
        if libc::getsockname(
            fd.as_raw_fd(),
            (&mut got as *mut libc::sockaddr_in).cast(),
            &mut len,
        ) != 0
        {
            return Err(ProbeError::os("getsockname"));
        }
        Ok((fd, got))
    }
}

/// A listening TCP socket on loopback, and its address.
fn listener() -> Result<(OwnedFd, libc::sockaddr_in), ProbeError> {
    let (fd, addr) = bound(libc::SOCK_STREAM)?;
    // SAFETY: our socket.
    if unsafe { libc::listen(fd.as_raw_fd(), 16) } != 0 {
        return Err(ProbeError::os("listen"));
    }
    Ok((fd, addr))
}

/// A TCP connection to `addr`, Nagle off (each small write goes at once, as latency tests set).
fn dial(addr: &libc::sockaddr_in) -> Result<OwnedFd, ProbeError> {
    // SAFETY: plain syscalls on our descriptors and buffers.
    unsafe {
        let fd = owned(
            libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0),
            "socket",
        )?;
        if libc::connect(
            fd.as_raw_fd(),
            (addr as *const libc::sockaddr_in).cast(),
            ADDR_LEN,
        ) != 0
        {
            return Err(no_port("connect to 127.0.0.1"));
        }
        no_delay(&fd);
        Ok(fd)
    }
}

fn no_delay(fd: &OwnedFd) {
    let one: libc::c_int = 1;
    // SAFETY: a valid option buffer.
    unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_NODELAY,
            (&one as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
}

fn accept(listener: &OwnedFd) -> Result<OwnedFd, ProbeError> {
    // SAFETY: our listening socket; the peer's address is not asked for.
    let fd = unsafe {
        libc::accept4(
            listener.as_raw_fd(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            libc::SOCK_CLOEXEC,
        )
    };
    let fd = owned(fd, "accept")?;
    no_delay(&fd);
    Ok(fd)
}

/// Two joined ends: (ours, the peer's).
fn pair(t: Transport) -> Result<(End, End), ProbeError> {
    let single = |fd: OwnedFd| End {
        read: fd,
        write: None,
    };
    match t {
        Transport::Pipe => {
            let mut there = [0; 2];
            let mut back = [0; 2];
            // SAFETY: out-arrays of two ints each.
            unsafe {
                if libc::pipe2(there.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
                    return Err(ProbeError::os("pipe2"));
                }
                let there = (owned(there[0], "pipe2")?, owned(there[1], "pipe2")?);
                if libc::pipe2(back.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
                    return Err(ProbeError::os("pipe2"));
                }
                let back = (owned(back[0], "pipe2")?, owned(back[1], "pipe2")?);
                Ok((
                    End {
                        read: back.0,
                        write: Some(there.1),
                    },
                    End {
                        read: there.0,
                        write: Some(back.1),
                    },
                ))
            }
        }
        Transport::Unix => {
            let mut fds = [0; 2];
            // SAFETY: an out-array of two ints.
            let rc = unsafe {
                libc::socketpair(
                    libc::AF_UNIX,
                    libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
                    0,
                    fds.as_mut_ptr(),
                )
            };
            if rc != 0 {
                return Err(ProbeError::os("socketpair"));
            }
            Ok((
                single(owned(fds[0], "socketpair")?),
                single(owned(fds[1], "socketpair")?),
            ))
        }
        Transport::Tcp => {
            let (l, addr) = listener()?;
            let ours = dial(&addr)?;
            let theirs = accept(&l)?;
            Ok((single(ours), single(theirs)))
        }
        Transport::Udp => {
            let (a, aa) = bound(libc::SOCK_DGRAM)?;
            let (b, ba) = bound(libc::SOCK_DGRAM)?;
            for (fd, to) in [(&a, &ba), (&b, &aa)] {
                // SAFETY: our socket and a valid address.
                let rc = unsafe {
                    libc::connect(
                        fd.as_raw_fd(),
                        (to as *const libc::sockaddr_in).cast(),
                        ADDR_LEN,
                    )
                };
                if rc != 0 {
                    return Err(no_port("connect to 127.0.0.1"));
                }
            }
            Ok((single(a), single(b)))
        }
    }
}

/// Reads exactly `buf.len()` bytes (a stream), or one datagram of that size; false at the end
/// or on an error.
fn read_full(fd: RawFd, buf: &mut [u8], stream: bool) -> bool {
    let mut got = 0;
    while got < buf.len() {
        // SAFETY: the rest of a buffer we own.
        let n = unsafe { libc::read(fd, buf[got..].as_mut_ptr().cast(), buf.len() - got) };
        if n <= 0 {
            if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return false;
        }
        got += n as usize;
        if !stream {
            return got == buf.len();
        }
    }
    true
}

/// Writes all of `buf`; false on an error.
fn write_full(fd: RawFd, buf: &[u8]) -> bool {
    let mut put = 0;
    while put < buf.len() {
        // SAFETY: the rest of a buffer we own.
        let n = unsafe { libc::write(fd, buf[put..].as_ptr().cast(), buf.len() - put) };
        if n <= 0 {
            if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return false;
        }
        put += n as usize;
    }
    true
}

/// What the peer does with what it reads.
#[derive(Debug, Clone, Copy)]
enum Role {
    /// Sends every message of this size back.
    Echo(usize),
    /// Reads a count, that many bytes in reads of this size, then acknowledges with a byte.
    Sink(usize),
}

/// The peer thread and our end; stopped (its end shut, or our write end closed) and joined on
/// drop.
struct Peer {
    ours: End,
    theirs_fd: RawFd,
    transport: Transport,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Peer {
    fn start(t: Transport, role: Role, cpu: usize) -> Result<Peer, ProbeError> {
        let (ours, theirs) = pair(t)?;
        let theirs_fd = theirs.rfd();
        let stream = t.stream();
        let thread = std::thread::Builder::new()
            .name("oslab-ipc-peer".into())
            .spawn(move || {
                if set_affinity(0, &CpuSet::single(cpu)).is_err() {
                    return;
                }
                match role {
                    Role::Echo(size) => {
                        let mut buf = vec![0u8; size];
                        while read_full(theirs.rfd(), &mut buf, stream)
                            && write_full(theirs.wfd(), &buf)
                        {}
                    }
                    Role::Sink(size) => {
                        let mut buf = vec![0u8; size];
                        let mut count = [0u8; 8];
                        while read_full(theirs.rfd(), &mut count, stream) {
                            let mut left = u64::from_ne_bytes(count) as usize;
                            while left > 0 {
                                let want = left.min(size);
                                // SAFETY: our buffer, at most its length.
                                let n = unsafe {
                                    libc::read(theirs.rfd(), buf.as_mut_ptr().cast(), want)
                                };
                                if n <= 0 {
                                    return;
                                }
                                left -= n as usize;
                            }
                            if !write_full(theirs.wfd(), b"k") {
                                return;
                            }
                        }
                    }
                }
            })
            .map_err(|e| ProbeError::Failed(format!("spawning the peer thread: {e}")))?;
        Ok(Peer {
            ours,
            theirs_fd,
            transport: t,
            thread: Some(thread),
        })
    }

    /// `n` round trips of `msg`.
    fn round_trips(&self, msg: &mut [u8], n: u64) -> bool {
        let stream = self.transport.stream();
        (0..n).all(|_| write_full(self.ours.wfd(), msg) && read_full(self.ours.rfd(), msg, stream))
    }

    /// `n` messages of `msg` streamed, then the peer's acknowledgement.
    fn stream(&self, msg: &[u8], n: u64) -> bool {
        let count = (msg.len() as u64 * n).to_ne_bytes();
        let mut ack = [0u8; 1];
        write_full(self.ours.wfd(), &count)
            && (0..n).all(|_| write_full(self.ours.wfd(), msg))
            && read_full(self.ours.rfd(), &mut ack, true)
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        // The peer's next read ends: our write end closed (a pipe), its socket shut (the rest).
        match self.transport {
            Transport::Pipe => drop(self.ours.write.take()),
            // SAFETY: the peer's socket, still open (the thread owns it until it returns).
            _ => unsafe {
                libc::shutdown(self.theirs_fd, libc::SHUT_RDWR);
            },
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Round trips same-cpu and cross-cpu, then (streams) bandwidth at each size.
fn transport(
    cx: &Context,
    me: &'static Entry,
    t: Transport,
) -> Result<Vec<Measurement>, ProbeError> {
    let _class =
        oslab_os::affinity::SchedGuard::normal().map_err(|e| ProbeError::Failed(e.to_string()))?;
    let mut out = Vec::new();
    let placements = [("same-cpu", Some(cx.cpu)), ("cross-cpu", cx.peer_cpu)];
    for (placement, peer_cpu) in placements {
        let Some(peer_cpu) = peer_cpu else {
            out.push(Measurement::not_taken(
                me.id,
                params! {"placement" => placement, "message_bytes" => SMALL},
                metric::ROUND_TRIP,
                Unit::Ns,
                Status::Skipped(cx.unmet(crate::probe::Need::PeerCpu).unwrap_or_default()),
            ));
            continue;
        };
        let peer = Peer::start(t, Role::Echo(SMALL), peer_cpu)?;
        let mut msg = vec![b'x'; SMALL];
        let mut broken = false;
        let timing = cx
            .harness
            .batched(&mut |n| broken |= !peer.round_trips(&mut msg, n))?;
        if broken {
            return Err(ProbeError::Failed(format!(
                "the {} peer stopped answering",
                t.name()
            )));
        }
        let cpus = match placement {
            "same-cpu" => cx.cpu.to_string(),
            _ => format!("{},{peer_cpu}", cx.cpu),
        };
        let mut m = cx.measurement(
            me.id,
            params! {"placement" => placement, "cpus" => cpus, "message_bytes" => SMALL, "task" => "thread"},
            metric::ROUND_TRIP,
            &timing,
        );
        m.note_before(format!(
            "write {SMALL} byte, read the echo of a thread pinned {}",
            if placement == "same-cpu" {
                "to the same cpu"
            } else {
                "to another cpu"
            }
        ));
        out.push(m);
    }
    if !t.stream() {
        return Ok(out);
    }
    // Bandwidth: the reader on another cpu where there is one (both sides work at once, as
    // bw_pipe's two processes do), else beside the writer.
    let (placement, reader) = match cx.peer_cpu {
        Some(p) => ("cross-cpu", p),
        None => ("same-cpu", cx.cpu),
    };
    let sizes: &[usize] = if cx.harness.config.pace == oslab_core::pace::Pace::Quick {
        &[64, 64 << 10, 1 << 20]
    } else {
        &SIZES
    };
    // A curve of points: half the budget each (their intervals stay within a few percent).
    let harness = cx.harness.scaled(0.5);
    for &size in sizes {
        let peer = Peer::start(t, Role::Sink(size), reader)?;
        let msg = vec![b'x'; size];
        let mut broken = false;
        // A burst of about 4 MiB (at most 1,024 writes) per timed call: the count sent first
        // and the reader's acknowledgement at the end cost two cross-cpu wake-ups, which one
        // 64 KiB message a call made half the time (0.43x iperf3's figure).
        let burst = (BURST_BYTES / size).clamp(1, 1024) as u64;
        let timing = harness.batched(&mut |n| broken |= !peer.stream(&msg, n * burst))?;
        let timing = timing.map(|ns| ns / burst as f64);
        if broken {
            return Err(ProbeError::Failed(format!(
                "the {} reader stopped reading",
                t.name()
            )));
        }
        // ns per message -> bytes per ns = GB/s.
        let rate: Vec<f64> = timing.samples.iter().map(|&ns| size as f64 / ns).collect();
        let mut m = judged(
            me.id,
            params! {"placement" => placement, "cpus" => format!("{},{reader}", cx.cpu), "message_bytes" => size, "task" => "thread"},
            metric::BANDWIDTH,
            Unit::GBps,
            &rate,
            timing.note.clone(),
            Judge::Median,
        );
        m.batch = Some(timing.batch);
        m.note_before(format!(
            "{} streamed in writes of {}, read as it comes by a thread {}",
            t.name(),
            oslab_core::units::bytes(size as u64),
            if placement == "same-cpu" {
                "on the same cpu"
            } else {
                "on another cpu"
            }
        ));
        out.push(m);
    }
    Ok(out)
}

/// The bytes a bandwidth point streams between its handshakes.
const BURST_BYTES: usize = 4 << 20;

/// A TCP connection made and closed: socket, connect, accept, both closed.
fn connect(cx: &Context, me: &'static Entry) -> Result<Vec<Measurement>, ProbeError> {
    let (l, addr) = listener()?;
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    let mut failed = None;
    let timing = cx.harness.batched(&mut |n| {
        for _ in 0..n {
            let once = (|| -> Result<(), ProbeError> {
                let c = dial(&addr)?;
                let s = accept(&l)?;
                // SAFETY: a valid option buffer on our socket.
                unsafe {
                    libc::setsockopt(
                        c.as_raw_fd(),
                        libc::SOL_SOCKET,
                        libc::SO_LINGER,
                        (&linger as *const libc::linger).cast(),
                        std::mem::size_of::<libc::linger>() as libc::socklen_t,
                    )
                };
                drop(c);
                drop(s);
                Ok(())
            })();
            if let Err(e) = once {
                failed.get_or_insert(e);
                return;
            }
        }
    })?;
    if let Some(e) = failed {
        return Err(e);
    }
    let mut m = cx.measurement(
        me.id,
        params! {"message_bytes" => 0},
        metric::CONNECT,
        &timing,
    );
    m.note_before("socket + connect + accept + close of both, on loopback, in one thread; the client closed with SO_LINGER 0 (a reset, no TIME_WAIT)");
    Ok(vec![m])
}
