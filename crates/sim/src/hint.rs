//! Cache hints: the one place the simulator asks the processor to fetch
//! memory ahead of use. A hint never changes what the program computes,
//! only when memory arrives, so results are the same bits with or without
//! it (and on targets where it is a no-op).

/// Ask for the `lines` 64-byte cache lines from `p` on (nothing for a null
/// `p`). Any address is allowed: a prefetch never faults.
#[inline(always)]
pub fn prefetch(p: *const u8, lines: usize) {
    if p.is_null() {
        return;
    }
    for k in 0..lines {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: PREFETCHT0 reads no memory architecturally and cannot
        // fault, whatever the address (Intel SDM, PREFETCHh); SSE is part
        // of the x86-64 baseline.
        unsafe {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(64 * k).cast());
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = k;
    }
}

/// The cache lines a value of type `T` spans (at most one more when it
/// does not start on a line).
pub fn lines_of<T>() -> usize {
    std::mem::size_of::<T>().div_ceil(64) + 1
}

/// Where `x` lies.
pub fn addr<T>(x: &T) -> *const u8 {
    (x as *const T).cast()
}

/// Where `x` lies, null for none (a queue's front entry as a hint).
pub fn addr_of<T>(x: Option<&T>) -> *const u8 {
    x.map_or(std::ptr::null(), addr)
}
