//! The few system calls the bottleneck makes, wrapped: AF_PACKET sockets
//! bound to one interface, CLOCK_MONOTONIC, waiting with ppoll, real-time
//! scheduling, CPU time.

use std::ffi::CString;
use std::io;
use std::mem;

/// CLOCK_MONOTONIC in ns: the clock `time.monotonic_ns()` reads in Python,
/// shared by every network namespace.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec for the call to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

fn setsockopt_int(fd: i32, level: i32, name: i32, val: i32) -> io::Result<()> {
    // SAFETY: passes a pointer to a live c_int and its size.
    check(unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            &val as *const i32 as *const libc::c_void,
            mem::size_of::<i32>() as libc::socklen_t,
        )
    })
    .map(|_| ())
}

/// An AF_PACKET raw socket bound to one interface: it reads every frame
/// the interface receives (not the ones it sends) and sends frames straight
/// to the driver, bypassing the kernel's qdisc.
pub struct PacketSocket {
    fd: i32,
    pub ifname: String,
}

const PACKET_QDISC_BYPASS: i32 = 20;
const PACKET_IGNORE_OUTGOING: i32 = 23;
const PACKET_STATISTICS: i32 = 6;

impl PacketSocket {
    pub fn open(ifname: &str, buf_bytes: i32) -> io::Result<PacketSocket> {
        let cname = CString::new(ifname)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "interface name has a NUL"))?;
        // SAFETY: a NUL-terminated name.
        let ifindex = unsafe { libc::if_nametoindex(cname.as_ptr()) };
        if ifindex == 0 {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("no interface {ifname:?} in this network namespace"),
            ));
        }
        let proto = (libc::ETH_P_ALL as u16).to_be() as i32;
        // SAFETY: plain socket(2).
        let fd = check(unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                proto,
            )
        })?;
        let sock = PacketSocket {
            fd,
            ifname: ifname.to_string(),
        };
        // SAFETY: sockaddr_ll is plain data; zeroed is a valid value.
        let mut addr: libc::sockaddr_ll = unsafe { mem::zeroed() };
        addr.sll_family = libc::AF_PACKET as u16;
        addr.sll_protocol = proto as u16;
        addr.sll_ifindex = ifindex as i32;
        // SAFETY: binds with a valid sockaddr_ll of the right size.
        check(unsafe {
            libc::bind(
                fd,
                &addr as *const libc::sockaddr_ll as *const libc::sockaddr,
                mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        })?;
        setsockopt_int(fd, libc::SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)?;
        setsockopt_int(fd, libc::SOL_PACKET, PACKET_QDISC_BYPASS, 1)?;
        // Forced sizes (root) past net.core.{r,w}mem_max; plain ones otherwise.
        if setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, buf_bytes).is_err() {
            setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUF, buf_bytes)?;
        }
        if setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, buf_bytes).is_err() {
            setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_SNDBUF, buf_bytes)?;
        }
        // Frames that arrived before the bind are not ours to judge; start empty.
        let mut junk = [0u8; 64];
        while sock.recv(&mut junk).ok().flatten().is_some() {}
        sock.stats()?;
        Ok(sock)
    }

    pub fn fd(&self) -> i32 {
        self.fd
    }

    /// Read one frame without blocking: `Ok(None)` when none is waiting,
    /// `Ok(Some(len))` with the frame's full length (larger than `buf` if it
    /// was cut short).
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        // SAFETY: reads into `buf` at most its length.
        let n = unsafe {
            libc::recv(
                self.fd,
                buf.as_mut_ptr() as *mut libc::c_void,
                buf.len(),
                libc::MSG_DONTWAIT | libc::MSG_TRUNC,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::EAGAIN) | Some(libc::EINTR) => Ok(None),
                _ => Err(e),
            };
        }
        Ok(Some(n as usize))
    }

    /// Send one frame; `Ok(false)` when the kernel had no room (ENOBUFS, EAGAIN).
    pub fn send(&self, frame: &[u8]) -> io::Result<bool> {
        // SAFETY: sends `frame`'s bytes.
        let n = unsafe {
            libc::send(
                self.fd,
                frame.as_ptr() as *const libc::c_void,
                frame.len(),
                libc::MSG_DONTWAIT,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::ENOBUFS) | Some(libc::EAGAIN) => Ok(false),
                _ => Err(e),
            };
        }
        Ok(true)
    }

    /// PACKET_STATISTICS: (frames received, frames dropped for want of
    /// socket buffer) since the last call.
    pub fn stats(&self) -> io::Result<(u64, u64)> {
        let mut st = libc::tpacket_stats {
            tp_packets: 0,
            tp_drops: 0,
        };
        let mut len = mem::size_of::<libc::tpacket_stats>() as libc::socklen_t;
        // SAFETY: a tpacket_stats for the kernel to fill, with its size.
        check(unsafe {
            libc::getsockopt(
                self.fd,
                libc::SOL_PACKET,
                PACKET_STATISTICS,
                &mut st as *mut libc::tpacket_stats as *mut libc::c_void,
                &mut len,
            )
        })?;
        Ok((st.tp_packets as u64, st.tp_drops as u64))
    }
}

impl Drop for PacketSocket {
    fn drop(&mut self) {
        // SAFETY: closes the fd this value owns.
        unsafe { libc::close(self.fd) };
    }
}

/// Wait until one of `fds` is readable or `timeout_ns` passes (or a signal).
pub fn wait_readable(fds: &[i32], timeout_ns: u64) {
    let mut pfds: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let ts = libc::timespec {
        tv_sec: (timeout_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (timeout_ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: valid pollfd array and timespec; no signal mask change.
    unsafe {
        libc::ppoll(
            pfds.as_mut_ptr(),
            pfds.len() as libc::nfds_t,
            &ts,
            std::ptr::null(),
        )
    };
}

/// Ask for SCHED_FIFO at `prio`; false when not allowed. Also sets the
/// timer slack to 1 ns so that timed waits end when asked.
pub fn realtime(prio: i32) -> bool {
    // SAFETY: prctl and sched_setscheduler on this thread with valid arguments.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
        let param = libc::sched_param {
            sched_priority: prio,
        };
        libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) == 0
    }
}

/// Run only on CPU `cpu`; false when not allowed.
pub fn pin_to_cpu(cpu: usize) -> bool {
    // SAFETY: a zeroed cpu_set_t with one bit set, passed with its size.
    unsafe {
        let mut set: libc::cpu_set_t = mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

/// Keep our memory resident (no page faults mid-release); best effort.
pub fn lock_memory() -> bool {
    // SAFETY: mlockall with valid flags.
    unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) == 0 }
}

/// User and system CPU time of this process, seconds.
pub fn cpu_times() -> (f64, f64) {
    // SAFETY: getrusage fills a plain struct.
    let mut ru: libc::rusage = unsafe { mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let s = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    (s(ru.ru_utime), s(ru.ru_stime))
}

/// Set by SIGINT/SIGTERM; the loop stops and writes its statistics.
pub static STOP: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, std::sync::atomic::Ordering::SeqCst);
}

/// Install the SIGINT/SIGTERM handlers (no SA_RESTART, so waits return)
/// and ask to be sent SIGTERM if the parent dies.
pub fn install_signal_handlers() {
    // SAFETY: a zeroed sigaction with our handler; the handler only stores an atomic.
    unsafe {
        let mut sa: libc::sigaction = mem::zeroed();
        sa.sa_sigaction = on_signal as *const () as usize;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(libc::SIGINT, &sa, std::ptr::null_mut());
        libc::sigaction(libc::SIGTERM, &sa, std::ptr::null_mut());
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGTERM as libc::c_ulong,
            0,
            0,
            0,
        );
    }
}

/// A counter of an interface in /sys (e.g. "tx_dropped"), if readable.
pub fn if_counter(ifname: &str, name: &str) -> Option<u64> {
    std::fs::read_to_string(format!("/sys/class/net/{ifname}/statistics/{name}"))
        .ok()?
        .trim()
        .parse()
        .ok()
}
